import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as pinterest from '../src/db/migrations/2026-11-27-11-pinterest.js';
import { createTestDatabase } from './support/database.js';

// A migration's `down` brings the schema back to what the migration before it left, not to an older one.
let handle: Awaited<ReturnType<typeof createTestDatabase>>;

beforeAll(async () => {
  handle = await createTestDatabase();
});
afterAll(async () => {
  await handle?.close();
});

async function providerCheck(db: Kysely<unknown>): Promise<string> {
  const { rows } = await sql<{ definition: string }>`
    select pg_get_constraintdef(oid) as definition from pg_constraint
    where conname = 'channels_provider_check'`.execute(db);
  return rows[0]!.definition;
}

describe('the Pinterest migration', () => {
  it('leaves LinkedIn, which the migration before it added, among the providers when it is undone', async () => {
    const db = handle.db as unknown as Kysely<unknown>;
    expect(await providerCheck(db)).toContain("'pinterest'");
    await pinterest.down(db);
    const undone = await providerCheck(db);
    expect(undone).toContain("'linkedin'");
    expect(undone).toContain("'threads'");
    expect(undone).not.toContain("'pinterest'");
    await pinterest.up(db);
    expect(await providerCheck(db)).toContain("'pinterest'");
  });
});
