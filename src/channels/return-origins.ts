import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';

/** How many return origins an organization may list. */
export const MAX_RETURN_ORIGINS = 20;

const MAX_ORIGIN_LENGTH = 300;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Why a URL cannot be one this server sends a user's browser to, or nothing when it can: `https`,
 * or `http` on a loopback host (for development), with no user name or password and no fragment.
 */
export function returnUrlProblem(url: URL): string | undefined {
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    return 'it must be an https URL (http only on localhost or a loopback address)';
  }
  if (url.username || url.password) return 'it must not carry a user name or password';
  if (url.hash) return 'it must not have a fragment (#…)';
  return undefined;
}

/**
 * Reads an origin a user typed (`https://app.example.com`, with or without a trailing `/`) and
 * answers it as `URL.origin` writes it, or the reason it is not one.
 */
export function parseReturnOrigin(input: string): { origin: string } | { problem: string } {
  if (input.length > MAX_ORIGIN_LENGTH) return { problem: `An origin has at most ${MAX_ORIGIN_LENGTH} characters.` };
  let url: URL;
  try {
    url = new URL(input.trim());
  } catch {
    return { problem: 'That is not a URL; write an origin such as https://app.example.com.' };
  }
  const problem = returnUrlProblem(url);
  if (problem) return { problem: `That origin cannot be used: ${problem}.` };
  if (url.pathname !== '/' || url.search)
    return { problem: 'Write only the origin (scheme, host and port), without a path or query.' };
  return { origin: url.origin };
}

export async function listReturnOrigins(db: Db, organizationId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('connection_return_origins')
    .select('origin')
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .orderBy('origin')
    .execute();
  return rows.map((row) => row.origin);
}

/**
 * Adds an origin; `false` when the organization lists the most it may. Adding a listed origin again
 * changes nothing.
 */
export async function addReturnOrigin(db: Db, organizationId: string, origin: string): Promise<boolean> {
  return transaction(db, async (trx) => {
    // Serialises additions of one organization, so that two at once cannot pass the limit together.
    await trx.selectFrom('organizations').select('id').where('id', '=', organizationId).forUpdate().execute();
    const { count } = await trx
      .selectFrom('connection_return_origins')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('organization_id', '=', organizationId)
      .executeTakeFirstOrThrow();
    if (Number(count) >= MAX_RETURN_ORIGINS) return isListedReturnOrigin(trx, organizationId, origin);
    await trx
      .insertInto('connection_return_origins')
      .values({ organization_id: organizationId, origin })
      .onConflict((oc) => oc.columns(['organization_id', 'origin']).doNothing())
      .execute();
    return true;
  });
}

export async function removeReturnOrigin(db: Db, organizationId: string, origin: string): Promise<void> {
  await db
    .deleteFrom('connection_return_origins')
    .where('organization_id', '=', organizationId)
    .where('origin', '=', origin)
    .execute();
}

export async function isListedReturnOrigin(db: Db, organizationId: string, origin: string): Promise<boolean> {
  const row = await db
    .selectFrom('connection_return_origins')
    .select('origin')
    .where('organization_id', '=', organizationId)
    .where('origin', '=', origin)
    .executeTakeFirst();
  return row !== undefined;
}
