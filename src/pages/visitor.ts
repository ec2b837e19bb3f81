import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import type { Request, Response } from 'express';
import { randomBase62 } from '../core/ids.js';
import type { Role } from '../core/roles.js';
import type { CsrfTokens } from './csrf.js';

export interface OrganizationChoice {
  id: string;
  name: string;
  role: Role;
}

/** A signed-in browser: who it is, the organizations they belong to and the one they act for. */
export interface Visitor {
  sessionId: string;
  /** `emailVerified`: a link mailed to the address was followed (the pages ask for it while mail is sent). */
  user: { id: string; email: string; name: string; emailVerified: boolean };
  /** The pages ask the user to verify their address: it is not, and this installation sends mail. */
  asksVerification?: boolean;
  organizations: OrganizationChoice[];
  /** `undefined` only for a user who belongs to no organization any more. */
  organization: OrganizationChoice | undefined;
  /** The CSRF token every form of this session carries. */
  csrfToken: string;
}

// Longer values are not ours: no lookup for them.
const MAX_COOKIE_VALUE = 128;
const NONCE_LIFETIME_S = 24 * 60 * 60;

/** Cookie names and attributes; `__Host-` names (RFC 6265bis) need Secure, so they are used over https only. */
export class BrowserCookies {
  readonly secure: boolean;
  readonly session: string;
  readonly nonce: string;

  constructor(publicUrl: string) {
    this.secure = publicUrl.startsWith('https:');
    this.session = this.secure ? '__Host-session' : 'session';
    this.nonce = this.secure ? '__Host-form' : 'form';
  }

  read(req: Request, name: string): string | undefined {
    const value = parseCookies(req.headers.cookie ?? '')[name];
    return value && value.length <= MAX_COOKIE_VALUE ? value : undefined;
  }

  set(res: Response, name: string, value: string, maxAgeSeconds: number): void {
    // HttpOnly: no script reads it; SameSite=Lax: other sites' forms and fetches go without it.
    const cookie = serializeCookie(name, value, {
      httpOnly: true,
      sameSite: 'lax',
      secure: this.secure,
      path: '/',
      maxAge: maxAgeSeconds,
    });
    res.append('Set-Cookie', cookie);
  }

  setSession(res: Response, token: string, maxAgeSeconds: number): void {
    this.set(res, this.session, token, maxAgeSeconds);
  }

  clearSession(res: Response): void {
    this.set(res, this.session, '', 0);
  }
}

export const visitorOf = (res: Response): Visitor | undefined => res.locals.visitor as Visitor | undefined;

/** What binds a signed-in browser's forms to its session. */
export const sessionBinding = (sessionId: string) => `session:${sessionId}`;

/**
 * The CSRF token for the forms of a browser that is not signed in (sign up, log in), bound to a
 * random cookie that is set here when missing.
 */
export async function anonymousFormToken(
  req: Request,
  res: Response,
  cookies: BrowserCookies,
  csrf: CsrfTokens,
): Promise<string> {
  let nonce = cookies.read(req, cookies.nonce);
  if (!nonce) {
    nonce = randomBase62(32);
    cookies.set(res, cookies.nonce, nonce, NONCE_LIFETIME_S);
  }
  return csrf.token(`anonymous:${nonce}`);
}

export async function verifyAnonymousForm(req: Request, cookies: BrowserCookies, csrf: CsrfTokens): Promise<boolean> {
  const nonce = cookies.read(req, cookies.nonce);
  return (
    nonce !== undefined &&
    csrf.verify(`anonymous:${nonce}`, (req.body as Record<string, unknown> | undefined)?.csrf_token)
  );
}

/** A form's token is a field; a page's script sends it in `X-CSRF-Token` with a JSON body. */
export function verifySessionForm(req: Request, visitor: Visitor, csrf: CsrfTokens): Promise<boolean> {
  const given = (req.body as Record<string, unknown> | undefined)?.csrf_token ?? req.get('X-CSRF-Token');
  return csrf.verify(sessionBinding(visitor.sessionId), given);
}

/** A form field as one string: absent, repeated or non-text values read as empty. */
export function field(req: Request, name: string): string {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

// Any origin will do: a `next` is resolved against it only to see where a browser would take it.
const NEXT_BASE = 'http://next.invalid';

/**
 * Where to go after signing in: a path on this site only, so the parameter cannot be used to send
 * people elsewhere. A browser resolves the `Location` it is given, so the path must already be in
 * the form it resolves to: `/settings/../..//evil.example` or `/%2e%2e//evil.example` would become
 * `//evil.example`, another site; `//evil.example` and `/\evil.example` are other sites as written.
 * Encoded slashes and backslashes are refused too, so no later decoding can make a second path of it.
 * The query is answered as the URL parser writes it (the same values, percent-encoded).
 */
export function safeNext(value: unknown, fallback = '/calendar'): string {
  if (typeof value !== 'string' || value.length > 8192) return fallback;
  // eslint-disable-next-line no-control-regex -- a control character is one of the refused ones
  if (!value.startsWith('/') || /[\u0000-\u001f\u007f\\]/.test(value)) return fallback;
  let url: URL;
  try {
    url = new URL(value, NEXT_BASE);
  } catch {
    return fallback;
  }
  if (url.origin !== NEXT_BASE) return fallback;
  const path = value.split(/[?#]/, 1)[0];
  if (url.pathname !== path || /%(2f|5c)/i.test(url.pathname)) return fallback;
  return `${url.pathname}${url.search}${url.hash}`;
}
