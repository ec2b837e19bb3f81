import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../src/db/database.js';
import { createTestDatabase, DIALECT } from './support/database.js';

let scratch: Awaited<ReturnType<typeof createTestDatabase>>;
let database: DatabaseHandle;

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
  const prepared = async () =>
    (
      await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(
        database.db,
      )
    ).rows;

  it('are prepared once per connection from their second time on', async () => {
    await findOrganization('org_none');
    expect((await prepared()).map((row) => row.statement)).not.toContain(
      'select * from "organizations" where "id" = $1',
    );
    await findOrganization('org_none');
    expect(await prepared()).toContainEqual({
      name: expect.stringMatching(/^stmt_\d+$/),
      statement: 'select * from "organizations" where "id" = $1',
    });
  });

  it('are prepared again when a migration changed the columns they answer', async () => {
    await findOrganization('org_none');
    await sql`alter table organizations add column motto text`.execute(database.db);
    await sql`insert into organizations (id, name, motto) values ('org_motto', 'Mottoed', 'say it once')`.execute(
      database.db,
    );
    const [organization] = await findOrganization('org_motto');
    expect(organization).toMatchObject({ id: 'org_motto', motto: 'say it once' });
  });
});
