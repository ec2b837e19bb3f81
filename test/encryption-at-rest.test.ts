import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../src/core/config.js';
import { KEY_FILE, loadKeys, parseEncryptionKeys } from '../src/crypto/key-source.js';
import { DecryptionError, Keyring, UnknownKeyError } from '../src/crypto/keyring.js';
import { openDatabase } from '../src/db/database.js';
import { createOrganization } from './support/fixtures.js';
import { freePort, spawnBuilt, untilExit } from './support/processes.js';
import { scratchDirs, scratchInstallation } from './support/scratch.js';
import { startTestServer, type TestServer } from './support/server.js';
import { scaled } from './support/timeouts.js';
import { startUpload } from './support/uploads.js';

const key = (id: string) => ({ id, key: randomBytes(32) });
const scratchDir = scratchDirs();

describe('the keyring (AES-256-GCM, a key id per value)', () => {
  it('decrypts what it encrypted, with a new IV each time, and only in the place it was written for', () => {
    const keyring = new Keyring([key('one')]);
    const a = keyring.encrypt('refresh-token-value', 'channel_credentials:ch_1');
    const b = keyring.encrypt('refresh-token-value', 'channel_credentials:ch_1');
    expect(a).toMatch(/^enc:v1:one:/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('refresh-token-value');
    expect(keyring.decrypt(a, 'channel_credentials:ch_1')).toBe('refresh-token-value');
    // Copied to another row, it does not decrypt.
    expect(() => keyring.decrypt(a, 'channel_credentials:ch_2')).toThrow(DecryptionError);
  });

  it('refuses a value that was altered or cut', () => {
    const keyring = new Keyring([key('one')]);
    const value = keyring.encrypt('secret', 'here');
    const last = value.at(-2) === 'A' ? 'B' : 'A';
    expect(() => keyring.decrypt(`${value.slice(0, -2)}${last}${value.at(-1)}`, 'here')).toThrow(DecryptionError);
    expect(() => keyring.decrypt(value.slice(0, 30), 'here')).toThrow(DecryptionError);
    expect(() => keyring.decrypt('secret', 'here')).toThrow(DecryptionError);
  });

  it('encrypts with its first key and still decrypts with the others, so a key can be rotated', () => {
    const [older, newer] = [key('older'), key('newer')];
    const before = new Keyring([older]).encrypt('token', 'row');
    const rotated = new Keyring([newer, older]);
    expect(rotated.decrypt(before, 'row')).toBe('token');
    expect(Keyring.keyIdOf(rotated.encrypt('token', 'row'))).toBe('newer');
    expect(() => new Keyring([newer]).decrypt(before, 'row')).toThrow(UnknownKeyError);
  });
});

describe('ENCRYPTION_KEY and the key file', () => {
  it('reads keys in base64 or hex, named or not, and refuses others without printing them', () => {
    const raw = randomBytes(32);
    const [named, unnamed] = parseEncryptionKeys(`k2:${raw.toString('base64')}, ${raw.toString('hex')}`);
    expect(named).toEqual({ id: 'k2', key: raw });
    expect(unnamed!.id).toMatch(/^[0-9a-f]{8}$/);
    expect(unnamed!.key).toEqual(raw);
    const short = randomBytes(16).toString('base64');
    expect(() => parseEncryptionKeys(short)).toThrow(ConfigError);
    try {
      parseEncryptionKeys(`a:${raw.toString('base64')},b:${short}`);
    } catch (error) {
      expect((error as Error).message).toContain('key 2 is not 32 bytes');
      expect((error as Error).message).not.toContain(short);
    }
    expect(() => parseEncryptionKeys(`a:${raw.toString('base64')},a:${randomBytes(32).toString('base64')}`)).toThrow(
      'twice',
    );
  });

  it('creates the data directory’s key file once, for its owner only, and refuses one others can read', () => {
    const dataDir = scratchDir('keys');
    const first = loadKeys({ encryptionKey: undefined, dataDir });
    const file = path.join(dataDir, KEY_FILE);
    expect(first.from).toBe('file');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const again = loadKeys({ encryptionKey: undefined, dataDir });
    expect(again.keyring.currentKeyId).toBe(first.keyring.currentKeyId);
    expect(again.keyring.decrypt(first.keyring.encrypt('x', 'c'), 'c')).toBe('x');
    fs.chmodSync(file, 0o644);
    expect(() => loadKeys({ encryptionKey: undefined, dataDir })).toThrow(/readable by others.*chmod 600/);
  });
});

describe('the installation’s own keys in the database', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('are stored encrypted, and one stored in clear by an earlier version is encrypted when read', async () => {
    // Signing in uses the CSRF key, listing pages the cursor key: all are in use.
    expect((await server.fetch('/login')).status).toBe(200);
    const rows = await server.ctx.db.selectFrom('instance_secrets').select(['name', 'value']).execute();
    expect(rows.map((row) => row.name)).toEqual(expect.arrayContaining(['csrf', 'cursor-signing', 'sandbox-network']));
    for (const row of rows) expect(Keyring.isEncrypted(row.value), row.name).toBe(true);

    const legacy = randomBytes(32).toString('base64url');
    await server.ctx.db.insertInto('instance_secrets').values({ name: 'legacy-key', value: legacy }).execute();
    expect((await server.ctx.secrets.get('legacy-key')).toString('base64url')).toBe(legacy);
    const stored = await server.ctx.db
      .selectFrom('instance_secrets')
      .select('value')
      .where('name', '=', 'legacy-key')
      .executeTakeFirstOrThrow();
    expect(Keyring.isEncrypted(stored.value)).toBe(true);
    expect(stored.value).not.toContain(legacy);
    expect(server.ctx.keyring.decrypt(stored.value, 'instance_secrets:legacy-key')).toBe(legacy);
  });
});

describe('a copy of the database', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('holds neither the CSRF key nor the media-signing key in clear, so it forges no form and no media URL', async () => {
    // Both keys in use: the log-in form carries a CSRF token, an upload a URL signed for this server.
    expect((await server.fetch('/login')).status).toBe(200);
    const org = await createOrganization(server.ctx.db);
    const upload = await startUpload(server, org, 'photo.png', 'image/png', 64);
    expect(new URL(upload.uploadUrl).pathname).toMatch(/^\/media-files\//);

    const copy = await everyRowAsText(server.ctx.db);
    expect(copy).toContain(org.email);
    for (const name of ['csrf', 'media-signing']) {
      const key = await server.ctx.secrets.get(name);
      for (const spelling of [key.toString('base64url'), key.toString('base64'), key.toString('hex')]) {
        expect(copy.includes(spelling), `${name} as ${spelling}`).toBe(false);
      }
      const stored = await server.ctx.db
        .selectFrom('instance_secrets')
        .select('value')
        .where('name', '=', name)
        .executeTakeFirstOrThrow();
      expect(Keyring.isEncrypted(stored.value), name).toBe(true);
    }
  });
});

/** What a copy of the database gives whoever holds it: every row of every table, as text. */
async function everyRowAsText(db: TestServer['ctx']['db']): Promise<string> {
  const { rows: tables } = await sql<{ schema: string; name: string }>`
    select table_schema as schema, table_name as name from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`.execute(db);
  expect(tables.map((table) => table.name)).toContain('instance_secrets');
  const parts: string[] = [];
  for (const table of tables) {
    const { rows } = await sql<{
      row: string;
    }>`select t::text as row from ${sql.table(`${table.schema}.${table.name}`)} t`.execute(db);
    parts.push(...rows.map((row) => row.row));
  }
  return parts.join('\n');
}

describe('rotating the key, with the built server and admin CLI', () => {
  const installation = scratchInstallation('rotate');

  async function startAndStop(): Promise<void> {
    const server = await installation.start();
    expect((await fetch(`${server.baseUrl}/login`)).status).toBe(200);
    await server.stop();
  }

  it(
    're-encrypts every value with a new key, keeps the server working, and a process without the key refuses to start',
    { timeout: scaled(120_000) },
    async () => {
      await startAndStop();
      const { dataDir, databaseUrl } = installation;
      const file = path.join(dataDir, KEY_FILE);
      const before = fs.readFileSync(file, 'utf8').trim().split('\n');
      expect(before).toHaveLength(1);

      const rotated = await installation.admin('rotate-encryption-key');
      expect(rotated.code, rotated.stderr).toBe(0);
      const after = fs.readFileSync(file, 'utf8').trim().split('\n');
      expect(after).toHaveLength(2);
      expect(after[1]).toBe(before[0]);
      const newId = after[0]!.split(':')[0]!;
      expect(rotated.stdout).toContain(`with the new key "${newId}"`);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);

      // Every stored value now names the new key.
      const database = await openDatabase({ databaseUrl, dataDir });
      try {
        const { rows } = await sql<{ value: string }>`select value from instance_secrets`.execute(database.db);
        expect(rows.length).toBeGreaterThan(0);
        for (const row of rows) expect(Keyring.keyIdOf(row.value)).toBe(newId);
      } finally {
        await database.close();
      }
      await startAndStop();

      // A process given other keys than the installation's says so, names no key material, and stops.
      const stranger = randomBytes(32).toString('base64');
      const refused = await untilExit(
        spawnBuilt(
          'start',
          [],
          installation.env({ ENCRYPTION_KEY: `other:${stranger}`, PORT: String(await freePort()) }),
        ),
      );
      expect(refused.code).toBe(78);
      expect(refused.stderr).toContain(`encrypted with the key "${newId}"`);
      expect(refused.stderr).toContain('same ENCRYPTION_KEY');
      expect(refused.stderr + refused.stdout).not.toContain(stranger);
    },
  );
});
