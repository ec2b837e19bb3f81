import { ForbiddenError, NotFoundError, UnprocessableError } from '../core/errors.js';
import { assertCan, includesRole, type Actor, type Role } from '../core/roles.js';
import { newId } from '../core/ids.js';
import { generateCredential, hashSecret } from '../crypto/issued-secrets.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import { recordAudit, type AuditActor } from '../audit/log.js';
import type { ApiKey } from './tables.js';

export const API_KEY_PREFIX = 'svc_live_';
/** How many characters of a key are kept in clear to tell keys apart in lists: the prefix and 8 more. */
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

/** How a key is shown after creation: its first characters and its last four, never the whole key. */
export function maskApiKey(key: Pick<ApiKey, 'prefix' | 'last_four'>): string {
  return `${key.prefix}…${key.last_four}`;
}

/**
 * Creates a key; the returned `secret` is the only time the whole key exists outside its holder's hands.
 * A member makes a key with a role of at most their own (their own by default) and is recorded as its
 * maker; a key made without a member (the admin CLI, an operator) acts as an owner, like keys made before
 * roles existed.
 */
export async function createApiKey(
  db: Db,
  organizationId: string,
  name: string,
  options: { maker?: Actor & { userId: string }; role?: Role } = {},
): Promise<{ secret: string; apiKey: ApiKey }> {
  const { maker } = options;
  const role = options.role ?? maker?.role ?? null;
  if (maker) {
    assertCan(maker, 'developers:manage', 'create API keys');
    if (role && !includesRole(maker.role, role)) {
      throw new ForbiddenError(
        `A key cannot have more rights than its maker: the ${maker.role} role may not give ${role}.`,
      );
    }
  }
  const secret = generateCredential(API_KEY_PREFIX);
  return transaction(db, async (trx) => {
    const apiKey = await trx
      .insertInto('api_keys')
      .values({
        id: newId('key'),
        organization_id: organizationId,
        name: name.trim() || 'API key',
        secret_hash: hashSecret(secret),
        prefix: secret.slice(0, SHOWN_PREFIX_LENGTH),
        last_four: secret.slice(-4),
        role,
        created_by_user_id: maker?.userId ?? null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(trx, {
      organizationId,
      actor: maker ? { user: maker.userId } : 'operator',
      action: 'api_key.created',
      subject: { type: 'api_key', id: apiKey.id, label: apiKey.name },
      details: { role: apiKey.role ?? 'owner' },
    });
    return { secret, apiKey };
  });
}

/** The organization's keys, newest first, with the email of the member who made each. */
export function listApiKeys(db: Db, organizationId: string): Promise<(ApiKey & { created_by_email: string | null })[]> {
  return db
    .selectFrom('api_keys')
    .leftJoin('users', 'users.id', 'api_keys.created_by_user_id')
    .selectAll('api_keys')
    .select('users.email as created_by_email')
    .where('api_keys.organization_id', '=', organizationId)
    .orderBy('api_keys.created_at', 'desc')
    .orderBy('api_keys.id', 'desc')
    .execute();
}

/** Revokes one key of the organization by id, for `actor`. Revoking twice is harmless (and recorded once). */
export async function revokeApiKey(
  db: Db,
  organizationId: string,
  keyId: string,
  now: Date,
  actor: AuditActor = 'operator',
): Promise<ApiKey> {
  return transaction(db, async (trx) => {
    const key = await trx
      .selectFrom('api_keys')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('id', '=', keyId)
      .forUpdate()
      .executeTakeFirst();
    if (!key) throw new NotFoundError('No API key with this id in the organization.');
    if (key.revoked_at !== null) return key;
    await recordAudit(trx, {
      organizationId,
      actor,
      action: 'api_key.revoked',
      subject: { type: 'api_key', id: key.id, label: key.name },
    });
    return trx
      .updateTable('api_keys')
      .set({ revoked_at: now })
      .where('id', '=', key.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/**
 * Finds the active key of an organization that a shown prefix (as listed, e.g. `svc_live_Ab12Cd34`)
 * or a whole key designates. Operators type these by hand, so an ambiguous or unknown prefix is an error.
 */
export async function findApiKeyByPrefix(db: Db, organizationId: string, given: string): Promise<ApiKey> {
  const value = given.trim().replace(/….*$/, '');
  if (value.length < SHOWN_PREFIX_LENGTH || !value.startsWith(API_KEY_PREFIX)) {
    throw new UnprocessableError(
      `A key prefix is "${API_KEY_PREFIX}" followed by at least 8 characters, as shown in the key list.`,
    );
  }
  const matches = await db
    .selectFrom('api_keys')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('prefix', '=', value.slice(0, SHOWN_PREFIX_LENGTH))
    .where('revoked_at', 'is', null)
    .execute();
  if (matches.length === 0) throw new NotFoundError(`No active API key of this organization starts with ${value}.`);
  if (matches.length > 1) throw new UnprocessableError(`Several keys start with ${value}; give the whole key.`);
  return matches[0]!;
}
