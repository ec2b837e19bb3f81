import { randomBytes } from 'node:crypto';
import {
  type Answer,
  type FakeMetaTokenEnd,
  fieldsOf,
  graphError,
  type GraphRequest,
  pick,
  tokenEnded,
  tokenRequired,
  tokenUnparsable,
  tokenValue,
} from './fake-meta-protocol.js';

// Facebook Login for Business as developers.facebook.com documents it for a web app that builds the login flow
// itself ("Manually Build a Login Flow", "Access Tokens", "Long-Lived Access Tokens", "Debug token"): the login
// dialog at www.facebook.com/{version}/dialog/oauth, the code exchanged for a short-lived user token at
// `/oauth/access_token`, that one exchanged for a long-lived one (about 60 days) with `grant_type=
// fb_exchange_token`, the user's Pages and their Page tokens (`/me/accounts`: a Page token derived from a
// long-lived user token does not expire, one from a short-lived token lasts an hour), the granted permissions
// (`/me/permissions`, and DELETE to revoke one or all), and `/debug_token`.

/** The Facebook user who logs in at the fake dialog. */
export interface FakeMetaUser {
  id: string;
  name: string;
  email: string;
}

/** An Instagram professional account linked to a Page. */
export interface FakeMetaInstagramAccount {
  /** The IG user id (`17841…`), what every Instagram call names. */
  id: string;
  username: string;
  name: string;
  profilePictureUrl: string;
  followersCount: number;
}

/** A Page the user can act on. */
export interface FakeMetaPage {
  id: string;
  name: string;
  /** The Page's @name: a video's `permalink_url` is under it. */
  username: string;
  category: string;
  /** What the user may do on the Page (`CREATE_CONTENT`, `MODERATE`, …): publishing needs `CREATE_CONTENT`. */
  tasks: string[];
  pictureUrl: string;
  instagram: FakeMetaInstagramAccount | null;
}

/** A token the fake issued: a user token, or a Page token derived from one. */
export interface FakeMetaToken {
  value: string;
  kind: 'user' | 'page';
  userId: string;
  /** The Page of a Page token. */
  pageId: string | null;
  /** The user token a Page token was derived from. */
  derivedFrom: string | null;
  /** Its grant's index in the fake's `grants`. */
  grant: number;
  longLived: boolean;
  /** ms on the fake's clock. */
  issuedAt: number;
  /** ms on the fake's clock; null: never (a Page token from a long-lived user token). */
  expiresAt: number | null;
  /** Ended before its time, and why. */
  ended: FakeMetaTokenEnd | null;
}

/** What the user granted the app: each permission asked for, granted or declined, and the Pages chosen. */
export interface FakeMetaGrant {
  userId: string;
  permissions: { permission: string; status: 'granted' | 'declined' }[];
  pageIds: string[];
  /** The user removed the app (or the app revoked every permission): every token of the grant fails with 458. */
  removed: boolean;
}

/** A visit to the login dialog, and what became of it. */
export interface FakeMetaAuthorization {
  clientId: string;
  redirectUri: string;
  state: string | null;
  /** The permissions asked for: `scope`, or those of the `config_id` (Login for Business configurations). */
  scopes: string[];
  configId: string | null;
  outcome: 'approved' | 'denied' | 'refused';
}

/** The permissions of Meta's permissions reference that the Page and Instagram flows use. */
export const PERMISSIONS = [
  'public_profile',
  'email',
  'pages_show_list',
  'pages_read_engagement',
  'pages_manage_posts',
  'pages_manage_engagement',
  'pages_manage_metadata',
  'pages_read_user_content',
  'business_management',
  'instagram_basic',
  'instagram_content_publish',
  'instagram_manage_comments',
  'instagram_manage_insights',
  'read_insights',
];

const CODE_LIFETIME_MS = 10 * 60_000;
/** "Short-lived tokens usually have a lifetime of about an hour or two." */
export const SHORT_LIVED_SECONDS = 3_600;
/** "A long-lived token generally lasts about 60 days" (the docs' sample answers 5,183,944 seconds). */
export const LONG_LIVED_SECONDS = 5_184_000;
/** A Page token derived from a short-lived user token "is valid for only 1 hour". */
const PAGE_TOKEN_FROM_SHORT_SECONDS = 3_600;

interface AuthorizationCode {
  clientId: string;
  redirectUri: string;
  /** The grant's index in `grants`. */
  grant: number;
  expiresAt: number;
  used: boolean;
}

export interface LoginContext {
  now(): number;
  appId: string;
  appSecret: string;
  /** The app's Valid OAuth Redirect URIs; empty: any http(s) URL, for a test that does not care. */
  redirectUris: string[];
  /** Login for Business configurations: `config_id` → the permissions it asks for. */
  configurations: Record<string, string[]>;
  user: FakeMetaUser;
  pages: FakeMetaPage[];
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The login part of the fake: the dialog, tokens, grants, and the questions about them. */
export class LoginStore {
  readonly tokens: FakeMetaToken[] = [];
  readonly grants: FakeMetaGrant[] = [];
  readonly authorizations: FakeMetaAuthorization[] = [];
  private readonly codes = new Map<string, AuthorizationCode>();
  private denyNext = false;
  private grantOnlyNext: string[] | null = null;
  private pagesNext: string[] | null = null;
  private userLifetimes = { short: SHORT_LIVED_SECONDS, long: LONG_LIVED_SECONDS };

  constructor(private readonly context: LoginContext) {}

  deny(): void {
    this.denyNext = true;
  }

  grantOnly(permissions: string[]): void {
    this.grantOnlyNext = permissions;
  }

  choosePages(pageIds: string[]): void {
    this.pagesNext = pageIds;
  }

  lifetimes(lifetimes: { shortLived?: number; longLived?: number }): void {
    this.userLifetimes = {
      short: lifetimes.shortLived ?? this.userLifetimes.short,
      long: lifetimes.longLived ?? this.userLifetimes.long,
    };
  }

  /** Ends every token issued so far, as Meta does when the user changes their password or logs out. */
  endTokens(end: FakeMetaTokenEnd): void {
    if (end === 'app-removed') for (const grant of this.grants) grant.removed = true;
    else for (const token of this.tokens) token.ended ??= end;
  }

  /** The user's grant in force: the last one, unless the app was removed since. */
  private currentGrant(): FakeMetaGrant | undefined {
    const last = this.grants.findLast((g) => g.userId === this.context.user.id);
    return last && !last.removed ? last : undefined;
  }

  /** The grant a token was issued under: a token of a removed grant stays dead after the user logs in again. */
  grantOf(token: FakeMetaToken): FakeMetaGrant {
    return this.grants[token.grant]!;
  }

  granted(grant: FakeMetaGrant): string[] {
    return grant.permissions.filter((p) => p.status === 'granted').map((p) => p.permission);
  }

  // ---- the dialog ----

  /** Meta shows an error page, and sends nothing back to the app, when the login request is wrong. */
  private errorPage(reason: string): Answer {
    return {
      status: 200,
      html:
        '<!doctype html><html><head><title>Error</title></head><body><h1>Sorry, something went wrong.</h1>' +
        `<p>${escapeHtml(reason)}</p></body></html>`,
    };
  }

  dialog(query: URLSearchParams): Answer {
    const { context } = this;
    const clientId = query.get('client_id') ?? '';
    const redirectUri = query.get('redirect_uri') ?? '';
    const state = query.get('state');
    const configId = query.get('config_id');
    const scopes = configId
      ? (context.configurations[configId] ?? [])
      : (query.get('scope') ?? '').split(/[,\s]+/).filter((s) => s !== '');
    const record = (outcome: FakeMetaAuthorization['outcome']) =>
      this.authorizations.push({ clientId, redirectUri, state, scopes, configId, outcome });
    if (clientId !== context.appId) {
      record('refused');
      return this.errorPage('Invalid App ID: The provided app ID does not look like a valid app ID.');
    }
    let target: URL;
    try {
      target = new URL(redirectUri);
    } catch {
      record('refused');
      return this.errorPage('Invalid redirect_uri: the redirect URI is not an absolute URL.');
    }
    if (
      (target.protocol !== 'https:' && target.protocol !== 'http:') ||
      (context.redirectUris.length > 0 && !context.redirectUris.includes(redirectUri))
    ) {
      record('refused');
      return this.errorPage(
        "URL Blocked: This redirect failed because the redirect URI is not whitelisted in the app's Client OAuth Settings.",
      );
    }
    if (configId && !context.configurations[configId]) {
      record('refused');
      return this.errorPage('Invalid config_id: no Facebook Login for Business configuration has this id.');
    }
    const unknown = scopes.filter((s) => !PERMISSIONS.includes(s));
    if (unknown.length > 0) {
      record('refused');
      return this.errorPage(`Invalid Scopes: ${unknown.join(', ')}.`);
    }
    if ((query.get('response_type') ?? 'code') !== 'code') {
      record('refused');
      return this.errorPage('The fake serves the code flow only (response_type=code).');
    }
    const back = (params: Record<string, string>): Answer => {
      for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
      if (state !== null) target.searchParams.set('state', state);
      // Meta appends `#_=_` when the redirect URI has no fragment of its own.
      return { status: 302, headers: { Location: `${target.toString()}#_=_` } };
    };
    if (this.denyNext) {
      this.denyNext = false;
      record('denied');
      return back({
        error: 'access_denied',
        error_code: '200',
        error_description: 'Permissions error',
        error_reason: 'user_denied',
      });
    }
    record('approved');
    const grantOnly = this.grantOnlyNext;
    const pages = this.pagesNext ?? context.pages.map((p) => p.id);
    this.grantOnlyNext = null;
    this.pagesNext = null;
    // Logging in again adds to what the user granted before; public_profile is always granted.
    let grant = this.currentGrant();
    if (!grant) {
      grant = { userId: context.user.id, permissions: [], pageIds: [], removed: false };
      this.grants.push(grant);
    }
    for (const permission of ['public_profile', ...scopes]) {
      const status = permission === 'public_profile' || !grantOnly || grantOnly.includes(permission);
      const existing = grant.permissions.find((p) => p.permission === permission);
      if (existing) existing.status = status ? 'granted' : 'declined';
      else grant.permissions.push({ permission, status: status ? 'granted' : 'declined' });
    }
    grant.pageIds = pages;
    const code = `AQ${randomBytes(96).toString('base64url')}`;
    this.codes.set(code, {
      clientId,
      redirectUri,
      grant: this.grants.indexOf(grant),
      expiresAt: context.now() + CODE_LIFETIME_MS,
      used: false,
    });
    return back({ code });
  }

  // ---- tokens ----

  private issue(
    kind: 'user' | 'page',
    long: boolean,
    grant: number,
    pageId: string | null,
    derivedFrom: FakeMetaToken | null,
  ) {
    const now = this.context.now();
    let expiresAt: number | null;
    if (kind === 'user') expiresAt = now + (long ? this.userLifetimes.long : this.userLifetimes.short) * 1000;
    else expiresAt = long ? null : now + PAGE_TOKEN_FROM_SHORT_SECONDS * 1000;
    const token: FakeMetaToken = {
      value: tokenValue(),
      kind,
      userId: this.context.user.id,
      pageId,
      derivedFrom: derivedFrom?.value ?? null,
      grant,
      longLived: long,
      issuedAt: now,
      expiresAt,
      ended: null,
    };
    this.tokens.push(token);
    return token;
  }

  private clientError(params: Record<string, string>) {
    if (params.client_id !== this.context.appId)
      return graphError(400, { message: 'Error validating application. Invalid application ID.', code: 101 });
    if (params.client_secret !== this.context.appSecret)
      return graphError(400, { message: 'Error validating client secret.', code: 1 });
    return undefined;
  }

  accessToken(request: GraphRequest): Answer {
    const { params } = request;
    const failed = this.clientError(params);
    if (failed) throw failed;
    const answer = (token: FakeMetaToken): Answer => ({
      status: 200,
      body: {
        access_token: token.value,
        token_type: 'bearer',
        expires_in: Math.round((token.expiresAt! - this.context.now()) / 1000),
      },
    });
    if (params.grant_type === 'fb_exchange_token') {
      const given = this.tokens.find((t) => t.value === params.fb_exchange_token && t.kind === 'user');
      if (!given) throw tokenUnparsable();
      this.check(given);
      return answer(this.issue('user', true, given.grant, null, null));
    }
    if (params.code === undefined)
      throw graphError(400, { message: 'Missing authorization code', code: 1, type: 'OAuthException' });
    const code = this.codes.get(params.code);
    if (!code || code.clientId !== this.context.appId)
      throw graphError(400, { message: 'Invalid verification code format.', code: 100, error_subcode: 36007 });
    if (code.used)
      throw graphError(400, { message: 'This authorization code has been used.', code: 100, error_subcode: 36009 });
    if (code.expiresAt <= this.context.now())
      throw graphError(400, { message: 'This authorization code has expired.', code: 100, error_subcode: 36007 });
    if (params.redirect_uri !== code.redirectUri)
      throw graphError(400, {
        message:
          'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request',
        code: 100,
        error_subcode: 36008,
      });
    code.used = true;
    return answer(this.issue('user', false, code.grant, null, null));
  }

  /** The token of a request, alive, or Meta's error for it. */
  authenticate(request: GraphRequest): FakeMetaToken {
    if (request.token === undefined) throw tokenRequired();
    const token = this.tokens.find((t) => t.value === request.token);
    if (!token) throw tokenUnparsable();
    this.check(token);
    return token;
  }

  private check(token: FakeMetaToken): void {
    const now = this.context.now();
    const grant = this.grantOf(token);
    const parent = token.derivedFrom ? this.tokens.find((t) => t.value === token.derivedFrom) : undefined;
    if (grant.removed) throw tokenEnded('app-removed', this.context.appId, 0, now);
    const ended = token.ended ?? parent?.ended;
    if (ended) throw tokenEnded(ended, this.context.appId, token.expiresAt ?? now, now);
    if (token.expiresAt !== null && token.expiresAt <= now)
      throw tokenEnded('expired', this.context.appId, token.expiresAt, now);
  }

  /** The permissions a live token carries now (revoking one takes it from every token of the grant). */
  scopesOf(token: FakeMetaToken): string[] {
    return this.granted(this.grantOf(token));
  }

  /** The Pages the user chose for the app, as the token may see them. */
  pagesOf(token: FakeMetaToken): FakeMetaPage[] {
    const grant = this.grantOf(token);
    if (token.kind === 'page') return this.context.pages.filter((p) => p.id === token.pageId);
    return this.context.pages.filter((p) => grant.pageIds.includes(p.id));
  }

  /** `GET /debug_token?input_token=…`, with the app's token (`{app-id}|{app-secret}`) or a user's. */
  debugToken(request: GraphRequest): Answer {
    const { context } = this;
    const caller = request.token ?? '';
    if (caller !== `${context.appId}|${context.appSecret}`) this.authenticate(request);
    const input = this.tokens.find((t) => t.value === request.params.input_token);
    if (!input) throw tokenUnparsable();
    const grant = this.grantOf(input);
    let error: { code: number; subcode?: number; message: string } | undefined;
    try {
      this.check(input);
    } catch (failure) {
      const body = (failure as { error: { code: number; error_subcode?: number; message: string } }).error;
      error = { code: body.code, subcode: body.error_subcode, message: body.message };
    }
    const scopes = this.granted(grant);
    const seconds = (ms: number | null) => (ms === null ? 0 : Math.floor(ms / 1000));
    return {
      status: 200,
      body: {
        data: {
          app_id: context.appId,
          type: input.kind === 'user' ? 'USER' : 'PAGE',
          application: 'Fake Meta App',
          data_access_expires_at: seconds(input.issuedAt + 90 * 86_400_000),
          expires_at: seconds(input.expiresAt),
          is_valid: error === undefined,
          issued_at: seconds(input.issuedAt),
          ...(input.kind === 'page' ? { profile_id: input.pageId } : {}),
          scopes,
          granular_scopes: scopes
            .filter((s) => s.startsWith('pages_') || s.startsWith('instagram_'))
            .map((scope) => ({
              scope,
              target_ids: scope.startsWith('instagram_')
                ? grant.pageIds.flatMap((id) => context.pages.find((p) => p.id === id)?.instagram?.id ?? [])
                : grant.pageIds,
            })),
          user_id: input.userId,
          ...(error ? { error } : {}),
        },
      },
    };
  }

  /** `GET /me`: the user, or the Page of a Page token. */
  me(request: GraphRequest, token: FakeMetaToken): Answer {
    const fields = fieldsOf(request.params, ['name', 'id']);
    if (token.kind === 'page') {
      const page = this.context.pages.find((p) => p.id === token.pageId)!;
      return { status: 200, body: pick({ id: page.id, name: page.name, category: page.category }, fields) };
    }
    const { user } = this.context;
    const email = this.scopesOf(token).includes('email') ? user.email : undefined;
    return { status: 200, body: pick({ id: user.id, name: user.name, email }, fields) };
  }

  /** A Page as `/me/accounts` and `/{page-id}` give it. */
  pageObject(page: FakeMetaPage, accessToken: string | undefined): Record<string, unknown> {
    return {
      id: page.id,
      name: page.name,
      username: page.username,
      category: page.category,
      category_list: [{ id: '2500', name: page.category }],
      tasks: page.tasks,
      access_token: accessToken,
      picture: { data: { height: 50, width: 50, is_silhouette: false, url: page.pictureUrl } },
      link: `https://www.facebook.com/${page.username}`,
      instagram_business_account: page.instagram ? { id: page.instagram.id } : undefined,
    };
  }

  /** `GET /me/accounts`: the Pages the user chose, each with a Page token derived from this user token. */
  accounts(request: GraphRequest, token: FakeMetaToken): Answer {
    if (token.kind !== 'user')
      throw graphError(400, {
        message: '(#100) Tried accessing nonexisting field (accounts) on node type (Page)',
        code: 100,
      });
    const fields = fieldsOf(request.params, ['access_token', 'category', 'category_list', 'name', 'id', 'tasks']);
    // Without pages_show_list the list is empty, not an error.
    const pages = this.scopesOf(token).includes('pages_show_list') ? this.pagesOf(token) : [];
    const data = pages.map((page) => pick(this.pageObject(page, this.pageToken(token, page).value), fields));
    const cursor = (i: number) => Buffer.from(String(i)).toString('base64url');
    return {
      status: 200,
      body: { data, paging: { cursors: { before: cursor(0), after: cursor(Math.max(0, data.length - 1)) } } },
    };
  }

  /**
   * The Page token derived from a user token, the same on every ask: it lives as long as the user token lets it
   * (no expiry from a long-lived one, an hour from a short-lived one).
   */
  pageToken(userToken: FakeMetaToken, page: FakeMetaPage): FakeMetaToken {
    const derived = this.tokens.find((t) => t.derivedFrom === userToken.value && t.pageId === page.id);
    return derived ?? this.issue('page', userToken.longLived, userToken.grant, page.id, userToken);
  }

  permissions(token: FakeMetaToken): Answer {
    const grant = this.grantOf(token);
    return { status: 200, body: { data: grant.permissions.map((p) => ({ ...p })) } };
  }

  /** `DELETE /me/permissions[/{permission}]`: one permission declined, or the app removed (every token ends). */
  revoke(token: FakeMetaToken, permission: string | undefined): Answer {
    const grant = this.grantOf(token);
    if (permission === undefined) grant.removed = true;
    else {
      const granted = grant.permissions.find((p) => p.permission === permission);
      if (granted) granted.status = 'declined';
    }
    return { status: 200, body: { success: true } };
  }
}
