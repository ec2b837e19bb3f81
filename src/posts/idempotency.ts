import { createHash } from 'node:crypto';
import { UnprocessableError } from '../core/errors.js';
import type { Db } from '../db/database.js';

/** How long a successful create is remembered for its retries. */
const RETENTION_MS = 24 * 60 * 60 * 1000;

/** A request that carries an `Idempotency-Key`, reduced to what is stored about it. */
export interface IdempotentRequest {
  keyHash: string;
  requestHash: string;
}

export interface StoredResponse {
  status: number;
  body: unknown;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/** JSON with the keys of every object sorted, so the same body always hashes the same whatever its key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function idempotentRequest(key: string, body: unknown): IdempotentRequest {
  return { keyHash: sha256(key), requestHash: sha256(canonicalJson(body)) };
}

const cutoff = (now: Date) => new Date(now.getTime() - RETENTION_MS);

/**
 * The response of an earlier request with this key, or `undefined` when the key is new (or older than
 * 24 hours). The same key with another body is refused: it is a client bug, and answering the first
 * response would hide it.
 */
export async function findStoredResponse(
  db: Db,
  organizationId: string,
  request: IdempotentRequest,
  now: Date,
): Promise<StoredResponse | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'response_status', 'response_body'])
    .where('organization_id', '=', organizationId)
    .where('key_hash', '=', request.keyHash)
    .where('created_at', '>=', cutoff(now))
    .where('response_status', 'is not', null)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.request_hash !== request.requestHash) {
    throw new UnprocessableError(
      'This Idempotency-Key was used with a different request body; use a new key for a new request.',
      [{ path: 'headers.idempotency-key', message: 'was already used with a different body in the last 24 hours' }],
    );
  }
  return { status: row.response_status!, body: JSON.parse(row.response_body!) };
}

/**
 * Claims the key for the calling transaction, as its first write. While the claiming transaction runs,
 * PostgreSQL makes a concurrent claim of the same key wait on the row; when the first one commits the
 * second gets `false` and replays the stored response, and when it rolls back the second claims the
 * key itself. A key older than the retention period is taken over.
 */
export async function claimKey(
  trx: Db,
  organizationId: string,
  request: IdempotentRequest,
  now: Date,
): Promise<boolean> {
  const claimed = await trx
    .insertInto('idempotency_keys')
    .values({
      organization_id: organizationId,
      key_hash: request.keyHash,
      request_hash: request.requestHash,
      response_status: null,
      response_body: null,
      created_at: now,
    })
    .onConflict((oc) =>
      oc
        .columns(['organization_id', 'key_hash'])
        .doUpdateSet((eb) => ({
          request_hash: eb.ref('excluded.request_hash'),
          response_status: null,
          response_body: null,
          created_at: eb.ref('excluded.created_at'),
        }))
        .where('idempotency_keys.created_at', '<', cutoff(now)),
    )
    .returning('key_hash')
    .executeTakeFirst();
  return claimed !== undefined;
}

export async function storeResponse(
  trx: Db,
  organizationId: string,
  request: IdempotentRequest,
  response: StoredResponse,
): Promise<void> {
  await trx
    .updateTable('idempotency_keys')
    .set({ response_status: response.status, response_body: JSON.stringify(response.body) })
    .where('organization_id', '=', organizationId)
    .where('key_hash', '=', request.keyHash)
    .execute();
}

/** Housekeeping: removes the keys past the retention period (they answer nothing any more). */
export async function forgetExpiredKeys(db: Db, now: Date): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_at', '<', cutoff(now)).execute();
}
