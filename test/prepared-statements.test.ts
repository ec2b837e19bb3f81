import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/core/config.js';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { createChannel, createOrganization } from './support/fixtures.js';
import { createTestDatabase, DIALECT } from './support/database.js';
import { startTestServer } from './support/server.js';
import { stringMatching } from './support/typed-matchers.js';

let scratch: Awaited<ReturnType<typeof createTestDatabase>>;
let database: DatabaseHandle;

const prepared = async (handle: DatabaseHandle) =>
  (
    await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(
      handle.db,
    )
  ).rows;
const backend = async (handle: DatabaseHandle) =>
  (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(handle.db)).rows[0]!.pid;

/** Named statements are PostgreSQL's: the embedded database parses each statement where it runs. */
describe.skipIf(DIALECT !== 'postgres')('statements sent again and again', () => {
  beforeAll(async () => {
    scratch = await createTestDatabase();
    // One connection, so the statements of the test meet on it.
    database = await openDatabase({ databaseUrl: scratch.url, poolSize: 1 });
  });
  afterAll(async () => {
    await database?.close();
    await scratch?.close();
  });

  const findOrganization = (id: string) =>
    database.db.selectFrom('organizations').selectAll().where('id', '=', id).execute();

  it('are prepared once per connection from their second time on', async () => {
    await findOrganization('org_none');
    expect((await prepared(database)).map((row) => row.statement)).not.toContain(
      'select * from "organizations" where "id" = $1',
    );
    await findOrganization('org_none');
    expect(await prepared(database)).toContainEqual({
      name: stringMatching(/^stmt_\d+$/),
      statement: 'select * from "organizations" where "id" = $1',
    });
  });

  it('are sent again, on a connection that replaces the one that prepared them, when a migration changed the columns they answer', async () => {
    await findOrganization('org_none');
    const before = await backend(database);
    await sql`alter table organizations add column motto text`.execute(database.db);
    await sql`insert into organizations (id, name, motto) values ('org_motto', 'Mottoed', 'say it once')`.execute(
      database.db,
    );
    const [organization] = await findOrganization('org_motto');
    expect(organization).toMatchObject({ id: 'org_motto', motto: 'say it once' });
    // The connection that held the stale statement was closed when it went back to the pool.
    expect(await backend(database)).not.toBe(before);
    await findOrganization('org_motto');
    expect((await prepared(database)).map((row) => row.statement)).toContain(
      'select * from "organizations" where "id" = $1',
    );
  });

  it('fail with the stale plan inside a transaction, which cannot send them again, and work on the next connection', async () => {
    await findOrganization('org_motto');
    const before = await backend(database);
    await sql`alter table organizations add column slogan text`.execute(database.db);
    await expect(
      database.db
        .transaction()
        .execute((trx) => trx.selectFrom('organizations').selectAll().where('id', '=', 'org_motto').execute()),
    ).rejects.toThrow(/cached plan must not change result type/);
    expect(await backend(database)).not.toBe(before);
    const [organization] = await findOrganization('org_motto');
    expect(organization).toMatchObject({ id: 'org_motto', slogan: null });
  });
});

describe.skipIf(DIALECT !== 'postgres')('DATABASE_PREPARED_STATEMENTS (PgBouncer in transaction mode)', () => {
  beforeAll(async () => {
    scratch = await createTestDatabase();
  });
  afterAll(() => scratch?.close());

  /** The statements prepared on the service's one connection after it answered the same requests three times. */
  async function preparedAfterRequests(env: Record<string, string>): Promise<string[]> {
    const config = loadConfig({ ...env, DATABASE_URL: scratch.url! });
    const handle = await openDatabase({
      databaseUrl: config.databaseUrl,
      preparedStatements: config.databasePreparedStatements,
      poolSize: 1,
    });
    const server = await startTestServer({ database: handle });
    try {
      const org = await createOrganization(handle.db);
      const channel = await createChannel(handle.db, org.id, 'sandbox');
      for (let round = 0; round < 3; round++) {
        for (const path of ['/public/v1/is-connected', '/public/v1/channels', '/public/v1/posts']) {
          const response = await server.fetch(path, { headers: org.auth });
          expect(response.status, path).toBe(200);
        }
        // A create is a pipelined transaction.
        const created = await server.fetch('/public/v1/posts', {
          method: 'POST',
          headers: { ...org.auth, 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'draft', channelIds: [channel.id], content: `round ${round}` }),
        });
        expect(created.status, await created.text()).toBeLessThan(300);
      }
      return (await prepared(handle)).map((row) => row.statement);
    } finally {
      await server.close();
    }
  }

  it('names the statements the service repeats by default', async () => {
    expect((await preparedAfterRequests({})).length).toBeGreaterThanOrEqual(3);
  });

  it('=false sends every statement unnamed: nothing is prepared on the service’s connections', async () => {
    expect(await preparedAfterRequests({ DATABASE_PREPARED_STATEMENTS: 'false' })).toEqual([]);
  });
});
