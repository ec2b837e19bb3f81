import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as pinterest from '../src/db/migrations/2026-11-27-11-pinterest.js';
import * as lifecycle from '../src/db/migrations/2026-11-28-03-lifecycle.js';
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

describe('the lifecycle migration', () => {
  it('lets revocations outlive their organization, and undone, forgets those and ties them to it again', async () => {
    const db = handle.db as unknown as Kysely<unknown>;
    const foreignKey = async () =>
      (
        await sql<{ conname: string }>`
          select conname from pg_constraint where conname = 'account_revocations_organization_id_fkey'`.execute(db)
      ).rows.length;
    expect(await foreignKey()).toBe(0);
    await sql`insert into account_revocations (id, organization_id, provider, external_id, credentials)
      values ('rev_orphan', 'org_deleted', 'x', 'acct', 'sealed')`.execute(db);
    await lifecycle.down(db);
    expect(await foreignKey()).toBe(1);
    expect((await sql`select id from account_revocations where id = 'rev_orphan'`.execute(db)).rows).toEqual([]);
    expect((await sql`select to_regclass('stored_file_deletions') as t`.execute(db)).rows).toEqual([{ t: null }]);
    await lifecycle.up(db);
    expect(await foreignKey()).toBe(0);
  });
});
