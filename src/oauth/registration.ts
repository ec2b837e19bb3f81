import type { Clock } from '../core/clock.js';
import type { Config } from '../core/config.js';
import { newId, randomBase62 } from '../core/ids.js';
import { RateLimiter } from '../http/rate-limit.js';
import { generateCredential, hashSecret } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { isStorableText } from '../http/storable-text.js';
import { CLIENT_ID_PREFIX, CLIENT_ID_RANDOM_LENGTH, EXPIRING_ACCESS_TOKEN_SECONDS } from './apps.js';
import { OAuthError } from './errors.js';
import type { OAuthApp, TokenEndpointAuthMethod } from './tables.js';
import { checkRedirectUri, isLoopbackHost } from './urls.js';

const MAX_NAME_LENGTH = 100;
const MAX_REDIRECT_URIS = 10;
const AUTH_METHODS: readonly TokenEndpointAuthMethod[] = ['none', 'client_secret_basic', 'client_secret_post'];
/**
 * The grants a registered client has, whatever it asked for: the code, and the refresh tokens that come
 * with its one-hour access tokens.
 */
const GRANT_TYPES_ISSUED = ['authorization_code', 'refresh_token'];

/** RFC 7591 §2: the client metadata this server reads; any other member is ignored. */
export interface ClientMetadata {
  redirect_uris?: unknown;
  token_endpoint_auth_method?: unknown;
  grant_types?: unknown;
  response_types?: unknown;
  client_name?: unknown;
}

const invalidMetadata = (description: string) => new OAuthError('invalid_client_metadata', description);
const invalidRedirect = (description: string) => new OAuthError('invalid_redirect_uri', description);

/** A list of strings, or a refusal naming the member. */
function stringList(value: unknown, member: string): string[] {
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))
    throw invalidMetadata(`${member} must be an array of strings.`);
  return value as string[];
}

/**
 * The redirect URIs of a client that registers itself or publishes a metadata document: each one
 * `https`, or `http` on a loopback host (RFC 8252 §7.3), without fragment, wildcard or user info;
 * returned in canonical form. A refusal is `invalid_redirect_uri` (RFC 7591 §3.2.2).
 */
export function checkRedirectUris(value: unknown): string[] {
  if (value === undefined) throw invalidRedirect('redirect_uris is required: the URLs your client receives codes at.');
  const uris = stringList(value, 'redirect_uris');
  if (uris.length === 0) throw invalidRedirect('redirect_uris must name at least one redirect URL.');
  if (uris.length > MAX_REDIRECT_URIS)
    throw invalidRedirect(`redirect_uris may name at most ${MAX_REDIRECT_URIS} redirect URLs.`);
  return uris.map((uri) => {
    const checked = checkRedirectUri(uri);
    if (!checked.ok) throw invalidRedirect(`${checked.message} (${uri.slice(0, 200)})`);
    return checked.url;
  });
}

/** The client's name as shown on the consent page; a client that gave none is named after its redirect host. */
export function checkClientName(value: unknown, redirectUris: string[]): string {
  if (value === undefined) return new URL(redirectUris[0]!).host;
  if (typeof value !== 'string') throw invalidMetadata('client_name must be a string.');
  const name = value.trim();
  if (!name) return new URL(redirectUris[0]!).host;
  if (name.length > MAX_NAME_LENGTH)
    throw invalidMetadata(`client_name must be at most ${MAX_NAME_LENGTH} characters.`);
  // Shown on the consent page as the app's name: no control characters (a NUL could not even be stored)
  // and no lone surrogates.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name) || !isStorableText(name))
    throw invalidMetadata('client_name must be plain text, without control characters.');
  return name;
}

/**
 * `grant_types` and `response_types` may name more than this server issues (a client asking for
 * `refresh_token` is registered for what it can have, as RFC 7591 §3.2.1 allows), but must include the
 * authorization code flow, the only one there is.
 */
function checkFlows(metadata: ClientMetadata): void {
  if (
    metadata.grant_types !== undefined &&
    !stringList(metadata.grant_types, 'grant_types').includes('authorization_code')
  )
    throw invalidMetadata('grant_types must include authorization_code, the grant a client starts with here.');
  if (metadata.response_types !== undefined && !stringList(metadata.response_types, 'response_types').includes('code'))
    throw invalidMetadata('response_types must include code, the only response type of this server.');
}

function checkAuthMethod(value: unknown): TokenEndpointAuthMethod {
  // RFC 7591 §2: client_secret_basic when the client does not say.
  if (value === undefined) return 'client_secret_basic';
  if (typeof value !== 'string' || !AUTH_METHODS.includes(value as TokenEndpointAuthMethod)) {
    throw invalidMetadata(`token_endpoint_auth_method must be one of: ${AUTH_METHODS.join(', ')}.`);
  }
  return value as TokenEndpointAuthMethod;
}

export interface RegisteredClient {
  app: OAuthApp;
  /** The client secret in clear, this once; `undefined` for a public client. */
  secret: string | undefined;
}

/**
 * RFC 7591 §3: registers a client that belongs to no organization. A public client
 * (`token_endpoint_auth_method: none`) gets no secret and must use PKCE; a confidential one gets a
 * `pcs_…` secret, stored hashed. Until an organization approves it, housekeeping may delete it.
 */
export async function registerClient(db: Db, metadata: ClientMetadata, now: Date): Promise<RegisteredClient> {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    throw invalidMetadata('The body must be a JSON object of client metadata.');
  const redirectUris = checkRedirectUris(metadata.redirect_uris);
  const authMethod = checkAuthMethod(metadata.token_endpoint_auth_method);
  checkFlows(metadata);
  const name = checkClientName(metadata.client_name, redirectUris);
  const secret = authMethod === 'none' ? undefined : generateCredential('pcs_');
  const app = await db
    .insertInto('oauth_apps')
    .values({
      id: newId('app'),
      organization_id: null,
      client_id: CLIENT_ID_PREFIX + randomBase62(CLIENT_ID_RANDOM_LENGTH),
      name,
      description: '',
      picture_url: null,
      redirect_uri: redirectUris[0]!,
      redirect_uris: JSON.stringify(redirectUris),
      secret_hash: secret === undefined ? null : hashSecret(secret),
      secret_last_four: secret === undefined ? null : secret.slice(-4),
      registration: 'dynamic',
      token_endpoint_auth_method: authMethod,
      created_at: now,
      // An agent's tokens are short, with refresh tokens: nobody vouches for the client.
      access_token_lifetime_seconds: EXPIRING_ACCESS_TOKEN_SECONDS,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { app, secret };
}

/** RFC 7591 §3.2.1: the client information response, with the secret this once. */
export function clientInformation(client: RegisteredClient) {
  const { app, secret } = client;
  return {
    client_id: app.client_id,
    ...(secret === undefined ? {} : { client_secret: secret, client_secret_expires_at: 0 }),
    client_id_issued_at: Math.floor(app.created_at.getTime() / 1000),
    client_name: app.name,
    redirect_uris: app.redirect_uris,
    token_endpoint_auth_method: app.token_endpoint_auth_method,
    grant_types: GRANT_TYPES_ISSUED,
    response_types: ['code'],
  };
}

/**
 * Whether `given` (the authorization request's `redirect_uri`) is one of the client's registered
 * redirect URIs: character for character, except that for a registered client a loopback `http` URI
 * matches on any port (RFC 8252 §7.3: a native app's port is chosen when it runs). A metadata
 * document's redirect URIs are matched exactly, as the document says them. Returns the URI to answer at.
 */
export function matchRedirectUri(
  app: Pick<OAuthApp, 'redirect_uris' | 'registration'>,
  given: string,
): string | undefined {
  if (app.redirect_uris.includes(given)) return given;
  if (app.registration !== 'dynamic') return undefined;
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' || !isLoopbackHost(url.hostname) || given.includes('#')) return undefined;
  const withoutPort = (u: URL) => `${u.protocol}//${u.hostname}${u.pathname}${u.search}`;
  const matches = app.redirect_uris.some((registered) => {
    const candidate = new URL(registered);
    return candidate.protocol === 'http:' && withoutPort(candidate) === withoutPort(url) && !url.username;
  });
  return matches ? given : undefined;
}

/**
 * Registrations per client address and window (OAUTH_REGISTRATIONS_*): RFC 7591 registrations and
 * fetches of metadata documents, the two ways a visitor makes this server store a new client.
 */
export function registrationLimiter(ctx: { db: Db; config: Config; clock: Clock }): RateLimiter {
  const limits = ctx.config.oauthClients;
  return new RateLimiter(
    ctx.db,
    'oauth-registration',
    { max: limits.registrationsPerAddress, windowSeconds: limits.registrationWindowSeconds },
    ctx.clock,
  );
}

/** Records that a client redeemed a code, for the app's page and for operators. */
export async function markClientUsed(db: Db, appId: string, now: Date): Promise<void> {
  await db.updateTable('oauth_apps').set({ last_used_at: now }).where('id', '=', appId).execute();
}

/**
 * Housekeeping: a client that registered itself or came by its metadata document and that no
 * organization approved within `unusedDays` is deleted (its pending consent requests and codes go
 * with it: the foreign keys cascade).
 */
export async function forgetUnusedClients(db: Db, now: Date, unusedDays: number): Promise<void> {
  await db
    .deleteFrom('oauth_apps')
    .where('registration', '<>', 'settings')
    .where('created_at', '<', new Date(now.getTime() - unusedDays * 86_400_000))
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('oauth_grants as g').select('g.id').whereRef('g.app_id', '=', 'oauth_apps.id'))),
    )
    .execute();
}
