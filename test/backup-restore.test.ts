import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buffer } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnknownKeyError } from '../src/crypto/keyring.js';
import { openDatabase } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { channelCredentials, credentialsContext } from '../src/providers/account-credentials.js';
import { Keyring } from '../src/crypto/keyring.js';
import { TEST_DATABASE_URL } from './support/database.js';
import { createChannel, createOrganization, insertPost, type TestOrganization } from './support/fixtures.js';
import { bodyOf, type Schemas } from './support/api.js';
import { png } from './support/media-samples.js';
import { freePort, spawnBuilt, stop, untilExit, untilReady, type Finished } from './support/processes.js';
import { startTestServer, TEST_ENCRYPTION_KEY } from './support/server.js';
import { TIMEOUTS } from './support/timeouts.js';
import { completeUpload, startUpload } from './support/uploads.js';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'backup-restore-'));
const original = path.join(work, 'original');
const restored = path.join(work, 'restored');
const backupFile = path.join(work, 'installation.backup');
afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

function admin(dataDir: string, args: string[], extra: NodeJS.ProcessEnv = {}): Promise<Finished> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    LOG_LEVEL: 'warn',
    ...extra,
  };
  return untilExit(spawnBuilt('admin', args, env));
}

const tokens = {
  accessToken: 'access-token-value',
  refreshToken: 'refresh-token-value',
  expiresAt: null,
  scopes: ['post'],
};

describe.skipIf(TEST_DATABASE_URL)('backup and restore of the embedded database', () => {
  let org: TestOrganization;
  let channelId: string;
  const postIds: string[] = [];
  const media: { id: string; bytes: Buffer }[] = [];

  beforeAll(async () => {
    // An installation: posts, a connected channel with encrypted tokens, and uploaded media files.
    const database = await openDatabase({ dataDir: original });
    await migrateToLatest(database.db);
    const server = await startTestServer({ database, env: { DATA_DIR: original } });
    try {
      org = await createOrganization(database.db);
      const channel = await createChannel(database.db, org.id, 'sandbox');
      channelId = channel.id;
      await database.db
        .updateTable('channels')
        .set({
          external_id: 'account-1',
          credentials: server.ctx.keyring.encrypt(
            JSON.stringify(tokens),
            credentialsContext(org.id, 'sandbox', 'account-1'),
          ),
        })
        .where('id', '=', channel.id)
        .execute();
      for (const bytes of [png(2, 2, [255, 0, 0, 255]), png(3, 1, [0, 0, 255, 255])]) {
        const upload = await startUpload(server, org, 'picture.png', 'image/png', bytes.length);
        const put = await fetch(upload.uploadUrl, { method: 'PUT', headers: upload.headers, body: bytes });
        expect(put.status).toBe(200);
        const completed = await completeUpload(server, org, upload.uploadId);
        expect(completed.status).toBe(200);
        media.push({ id: (await bodyOf<Schemas['Media']>(completed)).id, bytes });
      }
      for (const status of ['scheduled', 'published', 'draft'] as const) {
        postIds.push(
          await insertPost(database.db, {
            organizationId: org.id,
            channelId: channel.id,
            status,
            scheduledAt: status === 'draft' ? null : '2030-01-01T00:00:00.000Z',
            mediaIds: media.map((m) => m.id),
          }),
        );
      }
    } finally {
      await server.close();
    }
  }, TIMEOUTS.hook);

  it(
    'refuses to back up while the server runs, saying to stop it',
    async () => {
      const port = await freePort();
      const child = spawnBuilt('start', [], {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATA_DIR: original,
        ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
        LOG_LEVEL: 'warn',
        PORT: String(port),
      });
      try {
        await untilReady(`http://127.0.0.1:${port}/healthz`, child);
        const refused = await admin(original, ['backup', backupFile]);
        expect(refused.code).toBe(75);
        expect(refused.stderr).toContain('stop the server');
        expect(fs.existsSync(backupFile)).toBe(false);
      } finally {
        await stop(child);
      }
    },
    TIMEOUTS.test + TIMEOUTS.process * 2,
  );

  it(
    'restores into a new DATA_DIR every post, the channel with tokens that decrypt with the same keys, and the media files',
    async () => {
      const made = await admin(original, ['backup', backupFile]);
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toContain('2 media files');
      // The keys are not in it: the key given by ENCRYPTION_KEY appears nowhere in the file.
      expect(fs.readFileSync(backupFile).includes(TEST_ENCRYPTION_KEY.split(':')[1]!)).toBe(false);

      const again = await admin(original, ['backup', backupFile]);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('already exists');

      const done = await admin(restored, ['restore', backupFile]);
      expect(done.code, done.stderr).toBe(0);
      expect(done.stdout).toContain('2 media files');

      const database = await openDatabase({ dataDir: restored });
      await migrateToLatest(database.db);
      const server = await startTestServer({ database, env: { DATA_DIR: restored } });
      try {
        const listed = await server.fetch('/public/v1/posts?limit=100', { headers: org.auth });
        expect(listed.status).toBe(200);
        const ids = (await bodyOf<Schemas['PostPage']>(listed)).data.map((post) => post.id);
        expect(ids.sort()).toEqual([...postIds].sort());

        const channel = await database.db
          .selectFrom('channels')
          .selectAll()
          .where('id', '=', channelId)
          .executeTakeFirstOrThrow();
        expect(channelCredentials(server.ctx.keyring, channel)).toEqual(tokens);
        // Without the same keys the tokens cannot be read.
        const otherKeys = new Keyring([{ id: 'other', key: randomBytes(32) }]);
        expect(() => channelCredentials(otherKeys, channel)).toThrow(UnknownKeyError);

        for (const file of media) {
          const row = await database.db
            .selectFrom('media')
            .select('storage_key')
            .where('id', '=', file.id)
            .executeTakeFirstOrThrow();
          expect(await buffer(await server.ctx.storage.get(row.storage_key))).toEqual(file.bytes);
        }
      } finally {
        await server.close();
      }
    },
    TIMEOUTS.test + TIMEOUTS.process * 4,
  );

  it(
    'refuses to restore over a database, and refuses a file that is not a whole backup, leaving nothing behind',
    async () => {
      const over = await admin(restored, ['restore', backupFile]);
      expect(over.code).toBe(1);
      expect(over.stderr).toContain('already holds an embedded database');

      const unknown = path.join(work, 'notes.txt');
      fs.writeFileSync(unknown, 'not a backup at all\n');
      const empty = path.join(work, 'empty');
      const notBackup = await admin(empty, ['restore', unknown]);
      expect(notBackup.code).toBe(1);
      expect(notBackup.stderr).toContain('is not a backup');

      const cut = path.join(work, 'cut.backup');
      const whole = fs.readFileSync(backupFile);
      fs.writeFileSync(cut, whole.subarray(0, Math.floor(whole.length / 2)));
      const damaged = await admin(empty, ['restore', cut]);
      expect(damaged.code).toBe(1);
      expect(damaged.stderr).toMatch(/damaged|cut/);
      expect(fs.readdirSync(empty).filter((name) => name !== 'encryption-keys')).toEqual([]);

      const usage = await admin(empty, ['restore']);
      expect(usage.code).toBe(64);
    },
    TIMEOUTS.test,
  );
});

describe('backup with DATABASE_URL', () => {
  it('refuses, and names PostgreSQL’s own tools', async () => {
    const dataDir = path.join(work, 'postgres');
    const refused = await admin(dataDir, ['backup', path.join(work, 'pg.backup')], {
      DATABASE_URL: TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/unused',
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('pg_dump');
    expect(refused.stderr).toContain('S3');
    expect(fs.existsSync(path.join(work, 'pg.backup'))).toBe(false);
  });
});
