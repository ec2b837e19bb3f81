import type { Db } from '../db/database.js';
import { UnauthorizedError } from '../errors.js';
import { API_KEY_PREFIX } from './api-keys.js';
import { hashSecret, isWellFormedCredential, type CredentialPrefix } from './credentials.js';
import type { Principal } from './principal.js';

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

// `lastUsedAt` is for people deciding which keys to revoke; minute precision spares a write per request.
const LAST_USED_PRECISION_MS = 60_000;

export const resolveApiKey: CredentialResolver = async (db, secretHash, now) => {
  const key = await db
    .selectFrom('api_keys')
    .select(['id', 'organization_id', 'last_used_at'])
    .where('secret_hash', '=', secretHash)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (!key) return undefined;
  if (!key.last_used_at || now.getTime() - key.last_used_at.getTime() >= LAST_USED_PRECISION_MS) {
    await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', key.id).execute();
  }
  return { organizationId: key.organization_id, credential: { type: 'api_key', id: key.id } };
};

/**
 * Authenticates a Public API request. Each kind of credential is recognised by its prefix and checked
 * for shape and checksum before the database is asked, so garbage costs no query.
 */
export class Authenticator {
  private readonly resolvers = new Map<CredentialPrefix, CredentialResolver>([[API_KEY_PREFIX, resolveApiKey]]);

  constructor(
    private readonly db: Db,
    private readonly clock: () => Date,
  ) {}

  /** Adds a kind of credential, e.g. OAuth access tokens. */
  register(prefix: CredentialPrefix, resolver: CredentialResolver): this {
    this.resolvers.set(prefix, resolver);
    return this;
  }

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
