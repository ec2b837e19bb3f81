import type { Clock } from '../core/clock.js';
import type { RequestHandler, Response } from 'express';
import { sql } from 'kysely';
import { RateLimitedError, UnauthorizedError } from '../core/errors.js';
import { hashSecret, isWellFormedCredential, type CredentialPrefix } from '../crypto/issued-secrets.js';
import { compiledOnce } from '../db/compiled-once.js';
import type { Db } from '../db/database.js';
import { isRole } from '../core/roles.js';
import type { Principal } from './principal.js';
import { audienceAccepts, protectedResourceChallenge } from './resource-challenge.js';
import { countHit, type LimitWindow, type RateLimiter, type RateLimitState } from './rate-limit.js';

/** A principal, and the count of its organization's rate-limit window after this request's hit. */
export interface CountedPrincipal {
  principal: Principal;
  count: number;
}

/**
 * Looks up an active credential of one kind by the hash of its secret and counts the request in its
 * organization's rate-limit window (`RateLimiter.window`), in one statement.
 */
export type CredentialResolver = (
  db: Db,
  secretHash: string,
  now: Date,
  window: LimitWindow,
) => Promise<CountedPrincipal | undefined>;

/** The realm the Public API's challenges have always named. */
export const PUBLIC_API_REALM = 'public-api';

// The longest credential is under 64 characters; anything much longer is refused before parsing.
const MAX_HEADER_LENGTH = 512;

/**
 * Reads the credential from `Authorization: Bearer <credential>` or the bare `Authorization: <credential>`.
 * The scheme name is case-insensitive (RFC 9110 §11.1). Never read from the query string: URLs end up in logs.
 */
export function credentialFromHeader(header: string | undefined): string | undefined {
  if (!header || header.length > MAX_HEADER_LENGTH) return undefined;
  const match = /^(?:bearer[ ]+)?([^\s]+)\s*$/i.exec(header.trim());
  return match?.[1];
}

// `lastUsedAt` is for people deciding which credentials to revoke; minute precision spares a write per request.
const LAST_USED_PRECISION_MS = 60_000;

/** Where each kind of issued credential is kept: by the SHA-256 of its secret, until revoked or expired. */
const CREDENTIAL_TABLES = {
  api_key: {
    table: 'api_keys',
    hash: 'secret_hash',
    audience: sql<null>`null::text`,
    scope: sql<null>`null::text`,
    unexpired: () => sql<boolean>`true`,
    role: sql<string | null>`role`,
  },
  // RFC 8707: the resource the token was issued for; an app's tokens may expire (RFC 6749 §5.1).
  oauth_token: {
    table: 'oauth_tokens',
    hash: 'token_hash',
    audience: sql.ref<string | null>('resource'),
    scope: sql.ref<string | null>('scope'),
    unexpired: (now: Date) => sql<boolean>`(expires_at is null or expires_at > ${now})`,
    // An access token acts with the role its approver has now; a grant kept when its approver left keeps
    // the role they had, and a grant made before roles (no role) acts as an owner.
    role: sql<string | null>`(
      select case when g.role is null then null else coalesce(m.role, g.role) end
      from oauth_grants g
      left join memberships m on m.organization_id = g.organization_id and m.user_id = g.approved_by_user_id
      where g.id = grant_id)`,
  },
} as const;

/**
 * The one lookup of every kind of credential the Public API accepts. The lookup, the rate-limit count
 * and the `lastUsedAt` update (once a minute) are one statement, so a request pays one round trip
 * for them: the count is taken in the database, so every process counts against the same budget.
 */
export function credentialResolver(type: Principal['credential']['type']): CredentialResolver {
  const { table, hash, audience, scope, unexpired, role } = CREDENTIAL_TABLES[type];
  const lookup = compiledOnce(
    5,
    (_db, secretHash: string, now: Date, usedBefore: Date, bucketPrefix: string, windowStart: Date) => sql<{
      id: string;
      organization_id: string;
      audience: string | null;
      scope: string | null;
      role: string | null;
      count: number;
    }>`
      with credential as (
        select id, organization_id, ${audience} as audience, ${scope} as scope, ${role} as role
        from ${sql.table(table)}
        where ${sql.ref(hash)} = ${secretHash} and revoked_at is null and ${unexpired(now)}
      ), used as (
        update ${sql.table(table)} set last_used_at = ${now}
        where id = (select id from credential)
          and (last_used_at is null or last_used_at <= ${usedBefore})
      ), counted as (
        ${countHit(sql`${bucketPrefix} || organization_id`, windowStart, sql`credential`)}
      )
      select credential.id, credential.organization_id, credential.audience, credential.scope, credential.role,
        counted.count
      from credential, counted`,
  );
  return async (db, secretHash, now, window) => {
    const usedBefore = new Date(now.getTime() - LAST_USED_PRECISION_MS);
    const { rows } = await db.executeQuery(lookup(db, secretHash, now, usedBefore, window.bucketPrefix, window.start));
    const found = rows[0];
    if (!found) return undefined;
    return {
      principal: {
        organizationId: found.organization_id,
        credential: { type, id: found.id },
        audience: found.audience,
        scopes: found.scope === null ? null : found.scope.split(' ').filter(Boolean),
        // A credential made before roles existed keeps acting as it always did: with every permission.
        role: isRole(found.role) ? found.role : 'owner',
      },
      count: found.count,
    };
  };
}

/**
 * Authenticates a Public API request. Each kind of credential is recognised by its prefix and checked
 * for shape and checksum before the database is asked, so garbage costs no query.
 */
export class Authenticator {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly resolvers: ReadonlyMap<CredentialPrefix, CredentialResolver>,
  ) {}

  /** Authenticates the request and counts it in its organization's window of `limiter`. */
  async authenticate(
    header: string | undefined,
    limiter: RateLimiter,
  ): Promise<{ principal: Principal; limit: RateLimitState }> {
    if (!header) {
      throw new UnauthorizedError(
        'Authentication required: send your API key or OAuth access token as "Authorization: Bearer <credential>".',
      );
    }
    const credential = credentialFromHeader(header);
    for (const [prefix, resolve] of this.resolvers) {
      if (!credential?.startsWith(prefix)) continue;
      if (isWellFormedCredential(credential, prefix)) {
        const now = this.clock.now();
        const window = limiter.window(now);
        const counted = await resolve(this.db, hashSecret(credential), now, window);
        if (counted) return { principal: counted.principal, limit: limiter.stateOf(counted.count, window, now) };
      }
      break;
    }
    throw new UnauthorizedError('The API key or access token is invalid, has expired or has been revoked.');
  }
}

// Requests this process makes for a principal it has already authenticated and counted.
const actingPrincipals = new WeakMap<object, Principal>();

/**
 * Makes `req`, a request this process built itself (an MCP tool call run as its Public API operation),
 * act for `principal`: the request that carried the tool call was authenticated and counted against
 * the organization's budget, so the operation is neither authenticated nor counted again. Only an
 * object built in this process can be a key here: nothing a client sends can claim a principal.
 */
export function actFor(req: object, principal: Principal): void {
  actingPrincipals.set(req, principal);
}

/**
 * Authenticates the request and charges it to its organization's rate-limit budget. Runs before the
 * contract validator, so an unauthenticated request learns nothing about the API, and every
 * authenticated response (errors included) carries the rate-limit headers.
 */
export function authenticateAndLimit(
  authenticator: Authenticator,
  limiter: RateLimiter,
  /** The resource's identifier, for the challenge of its 401s (read per request: the address may be set late). */
  resourceUrl?: () => string,
): RequestHandler {
  return async (req, res, next) => {
    // What a request may do beyond who it acts for (e.g. an OAuth token's scopes) is read from the
    // principal after this, so it holds for a tool call as for the request that carried it.
    const acting = actingPrincipals.get(req);
    if (acting) {
      res.locals.principal = acting;
      return next();
    }
    const header = req.headers.authorization;
    const { principal, limit: state } = await authenticator.authenticate(header, limiter).catch((error: unknown) => {
      if (resourceUrl !== undefined && error instanceof UnauthorizedError) {
        res.setHeader('WWW-Authenticate', unauthorizedChallenge(resourceUrl(), header, error));
      }
      throw error;
    });
    const resource = resourceUrl?.();
    if (resource !== undefined && !audienceAccepts(principal.audience, resource)) {
      // RFC 8707 §2 and RFC 9068 §4: a token meant for another resource is not valid here.
      const refused = new UnauthorizedError(
        `This access token was issued for ${principal.audience}, not for ${resource}; ` +
          'ask for a token with this resource (RFC 8707 resource parameter) or without one.',
      );
      res.setHeader('WWW-Authenticate', unauthorizedChallenge(resource, header, refused));
      throw refused;
    }
    res.locals.principal = principal;
    res.setHeader('RateLimit-Limit', String(state.limit));
    res.setHeader('RateLimit-Remaining', String(state.remaining));
    res.setHeader('RateLimit-Reset', String(state.resetSeconds));
    if (!state.allowed) {
      throw new RateLimitedError(
        `This organization has used its ${state.limit} requests for this window; ` +
          `retry in ${state.resetSeconds} seconds.`,
        state.resetSeconds,
      );
    }
    next();
  };
}

/**
 * The challenge of a `401` of the resource `resourceUrl` (RFC 6750 §3.1, RFC 9728 §5.1): where its
 * metadata is and, when a credential was sent, `invalid_token`.
 */
export function unauthorizedChallenge(resourceUrl: string, header: string | undefined, error: Error): string {
  return protectedResourceChallenge(
    resourceUrl,
    header ? { error: 'invalid_token', description: error.message } : undefined,
    PUBLIC_API_REALM,
  );
}

/** The principal `authenticateAndLimit` established for the request. */
export const principalOf = (res: Response): Principal => res.locals.principal as Principal;
