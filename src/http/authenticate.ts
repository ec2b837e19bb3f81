import type { RequestHandler, Response } from 'express';
import { sql } from 'kysely';
import { RateLimitedError, UnauthorizedError } from '../core/errors.js';
import { hashSecret, isWellFormedCredential, type CredentialPrefix } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import type { Principal } from './principal.js';
import type { RateLimiter } from './rate-limit.js';

/** Looks up an active credential of one kind by the hash of its secret. */
export type CredentialResolver = (db: Db, secretHash: string, now: Date) => Promise<Principal | undefined>;

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

/** Where each kind of issued credential is kept: by the SHA-256 of its secret, until revoked. */
const CREDENTIAL_TABLES = {
  api_key: { table: 'api_keys', hash: 'secret_hash' },
  oauth_token: { table: 'oauth_tokens', hash: 'token_hash' },
} as const;

/** The one lookup of every kind of credential the Public API accepts. */
export function credentialResolver(type: Principal['credential']['type']): CredentialResolver {
  const { table, hash } = CREDENTIAL_TABLES[type];
  return async (db, secretHash, now) => {
    const { rows } = await sql<{ id: string; organization_id: string; last_used_at: Date | null }>`
      select id, organization_id, last_used_at from ${sql.table(table)}
      where ${sql.ref(hash)} = ${secretHash} and revoked_at is null`.execute(db);
    const found = rows[0];
    if (!found) return undefined;
    if (!found.last_used_at || now.getTime() - found.last_used_at.getTime() >= LAST_USED_PRECISION_MS) {
      await sql`update ${sql.table(table)} set last_used_at = ${now} where id = ${found.id}`.execute(db);
    }
    return { organizationId: found.organization_id, credential: { type, id: found.id } };
  };
}

/**
 * Authenticates a Public API request. Each kind of credential is recognised by its prefix and checked
 * for shape and checksum before the database is asked, so garbage costs no query.
 */
export class Authenticator {
  constructor(
    private readonly db: Db,
    private readonly clock: () => Date,
    private readonly resolvers: ReadonlyMap<CredentialPrefix, CredentialResolver>,
  ) {}

  async authenticate(header: string | undefined): Promise<Principal> {
    if (!header) {
      throw new UnauthorizedError(
        'Authentication required: send your API key or OAuth access token as "Authorization: Bearer <credential>".',
      );
    }
    const credential = credentialFromHeader(header);
    for (const [prefix, resolve] of this.resolvers) {
      if (!credential?.startsWith(prefix)) continue;
      if (isWellFormedCredential(credential, prefix)) {
        const principal = await resolve(this.db, hashSecret(credential), this.clock());
        if (principal) return principal;
      }
      break;
    }
    throw new UnauthorizedError('The API key or access token is invalid or has been revoked.');
  }
}

/**
 * Authenticates the request and charges it to its organization's rate-limit budget. Runs before the
 * contract validator, so an unauthenticated request learns nothing about the API, and every
 * authenticated response (errors included) carries the rate-limit headers.
 */
export function authenticateAndLimit(authenticator: Authenticator, limiter: RateLimiter): RequestHandler {
  return async (req, res, next) => {
    const principal = await authenticator.authenticate(req.headers.authorization);
    res.locals.principal = principal;
    const state = await limiter.hit(principal.organizationId);
    res.setHeader('RateLimit-Limit', String(state.limit));
    res.setHeader('RateLimit-Remaining', String(state.remaining));
    res.setHeader('RateLimit-Reset', String(state.resetSeconds));
    if (!state.allowed) {
      throw new RateLimitedError(
        `This organization has used its ${state.limit} requests for this window; retry in ${state.resetSeconds} seconds.`,
        state.resetSeconds,
      );
    }
    next();
  };
}

/** The principal `authenticateAndLimit` established for the request. */
export const principalOf = (res: Response): Principal => res.locals.principal as Principal;
