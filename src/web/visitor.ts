import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import type { Request, RequestHandler, Response } from 'express';
import { listUserOrganizations } from '../accounts/organizations.js';
import type { AppContext } from '../context.js';
import type { Session } from '../db/schema.js';
import { randomBase62 } from '../ids.js';
import type { CsrfTokens } from './csrf.js';
import { findSession, SESSION_LIFETIME_MS, type SessionUser } from './sessions.js';

export interface OrganizationChoice {
  id: string;
  name: string;
  role: 'owner' | 'member';
}

/** A signed-in browser: who it is, the organizations they belong to and the one they act for. */
export interface Visitor {
  session: Session;
  user: SessionUser;
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
    const cookie = serializeCookie(name, value, { httpOnly: true, sameSite: 'lax', secure: this.secure, path: '/', maxAge: maxAgeSeconds });
    res.append('Set-Cookie', cookie);
  }

  setSession(res: Response, token: string): void {
    this.set(res, this.session, token, SESSION_LIFETIME_MS / 1000);
  }

  clearSession(res: Response): void {
    this.set(res, this.session, '', 0);
  }
}

export const visitorOf = (res: Response): Visitor | undefined => res.locals.visitor as Visitor | undefined;

/** Reads the session cookie, if any, and puts the signed-in visitor in `res.locals.visitor`. */
export function loadVisitor(ctx: AppContext, cookies: BrowserCookies, csrf: CsrfTokens): RequestHandler {
  return async (req, res, next) => {
    const token = cookies.read(req, cookies.session);
    const found = token ? await findSession(ctx.db, token, ctx.clock()) : undefined;
    if (found) {
      const organizations = await listUserOrganizations(ctx.db, found.user.id);
      const visitor: Visitor = {
        ...found,
        organizations,
        organization: organizations.find((o) => o.id === found.session.organization_id) ?? organizations[0],
        csrfToken: await csrf.token(`session:${found.session.id}`),
      };
      res.locals.visitor = visitor;
    }
    next();
  };
}

/**
 * The CSRF token for the forms of a browser that is not signed in (sign up, log in), bound to a
 * random cookie that is set here when missing.
 */
export async function anonymousFormToken(req: Request, res: Response, cookies: BrowserCookies, csrf: CsrfTokens): Promise<string> {
  let nonce = cookies.read(req, cookies.nonce);
  if (!nonce) {
    nonce = randomBase62(32);
    cookies.set(res, cookies.nonce, nonce, NONCE_LIFETIME_S);
  }
  return csrf.token(`anonymous:${nonce}`);
}

export async function verifyAnonymousForm(req: Request, cookies: BrowserCookies, csrf: CsrfTokens): Promise<boolean> {
  const nonce = cookies.read(req, cookies.nonce);
  return nonce !== undefined && csrf.verify(`anonymous:${nonce}`, (req.body as Record<string, unknown> | undefined)?.csrf_token);
}

export function verifySessionForm(req: Request, visitor: Visitor, csrf: CsrfTokens): Promise<boolean> {
  return csrf.verify(`session:${visitor.session.id}`, (req.body as Record<string, unknown> | undefined)?.csrf_token);
}

/** A form field as one string: absent, repeated or non-text values read as empty. */
export function field(req: Request, name: string): string {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/**
 * Where to go after signing in: a path on this site only, so the parameter cannot be used to send
 * people elsewhere (`//evil.example` and `/\evil.example` are other sites to a browser).
 */
export function safeNext(value: unknown, fallback = '/settings/developers/apps'): string {
  if (typeof value !== 'string' || value.length > 8192) return fallback;
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\') || /[\u0000-\u001f\\]/.test(value)) return fallback;
  return value;
}
