import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_DATABASE_URL } from './support/database.js';
import { json } from './support/http.js';
import { freePort, spawnBuilt, stop, untilExit, untilReady, type Finished } from './support/processes.js';

let dataDir: string;
let databaseUrl: string | undefined;
let closeDatabase: (() => Promise<void>) | undefined;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'admin-cli-'));
  if (TEST_DATABASE_URL) {
    // A database of its own, created empty: the CLI and the server migrate it themselves.
    const database = await createTestDatabase({ migrate: false });
    databaseUrl = database.url;
    closeDatabase = database.close;
  }
});
afterAll(async () => {
  await closeDatabase?.();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function env(): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  if (databaseUrl) base.DATABASE_URL = databaseUrl;
  return base;
}

function admin(...args: string[]): Promise<Finished> {
  return untilExit(spawnBuilt('admin', args, env()));
}

async function startServer(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawnBuilt('start', [], { ...env(), PORT: String(port) });
  const url = `http://127.0.0.1:${port}`;
  try {
    await untilReady(`${url}/healthz`, child);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return { child, url };
}

describe('admin CLI', () => {
  it('creates an organization, a key and a channel that the API then serves, and revokes the key', async () => {
    const org = await admin(
      'create-org',
      '--name',
      'Acme',
      '--email',
      'Owner@Example.com',
      '--password',
      'long enough pw',
    );
    expect(org.code, org.stderr).toBe(0);
    expect(org.stdout).toMatch(/^org_[0-9A-Za-z]{20}$/);

    const key = await admin('create-key', '--org', org.stdout, '--name', 'CI');
    expect(key.code, key.stderr).toBe(0);
    expect(key.stdout).toMatch(/^svc_live_[0-9A-Za-z]{30}$/);

    const channel = await admin('add-channel', '--org', org.stdout, '--provider', 'sandbox', '--name', 'Try it');
    expect(channel.code, channel.stderr).toBe(0);
    expect(channel.stdout).toMatch(/^ch_/);

    const listed = await admin('list-keys', '--org', org.stdout);
    expect(listed.stdout).toContain(`${key.stdout.slice(0, 17)}…${key.stdout.slice(-4)}`);
    expect(listed.stdout).not.toContain(key.stdout);
    expect(listed.stdout).toContain('never used');

    const { child, url } = await startServer();
    try {
      const response = await fetch(`${url}/public/v1/channels`, { headers: { Authorization: `Bearer ${key.stdout}` } });
      expect(response.status).toBe(200);
      expect((await json(response)).data).toEqual([expect.objectContaining({ id: channel.stdout, name: 'Try it' })]);

      if (!databaseUrl) {
        // The embedded database belongs to the server while it runs: the CLI is refused and changes nothing.
        const refused = await admin('create-key', '--org', org.stdout);
        expect(refused.code).toBe(75);
        expect(refused.stderr).toMatch(/in use by another process/);
        expect(refused.stdout).toBe('');

        const second = await untilExit(spawnBuilt('start', [], { ...env(), PORT: String(await freePort()) }));
        expect(second.code).toBe(75);
        expect(second.stderr).toMatch(/in use by another process/);
      }
    } finally {
      expect(await stop(child)).toBe(0);
    }

    const revoked = await admin('revoke-key', '--org', org.stdout, '--key-prefix', key.stdout.slice(0, 17));
    expect(revoked.code, revoked.stderr).toBe(0);

    const restarted = await startServer();
    try {
      const response = await fetch(`${restarted.url}/public/v1/channels`, {
        headers: { Authorization: `Bearer ${key.stdout}` },
      });
      expect(response.status).toBe(401);
    } finally {
      await stop(restarted.child);
    }
  }, 120_000);

  it('explains its usage and refuses bad input with a non-zero exit', async () => {
    const none = await admin();
    expect(none.code).toBe(64);
    expect(none.stdout).toContain('create-org');

    const unknown = await admin('make-coffee');
    expect(unknown.code).toBe(64);

    const missing = await admin('create-key');
    expect(missing.code).toBe(64);
    expect(missing.stderr).toContain('--org is required');

    const provider = await admin('add-channel', '--org', 'org_nope', '--provider', 'myspace', '--name', 'x');
    expect(provider.code).toBe(64);

    const noSuchOrganization = await admin('create-key', '--org', 'org_nope');
    expect(noSuchOrganization.code).toBe(1);
    expect(noSuchOrganization.stderr).toBe('There is no organization org_nope.');

    const shortPassword = await admin('create-org', '--name', 'X', '--email', 'x@example.com', '--password', 'short');
    expect(shortPassword.code).toBe(1);
    expect(shortPassword.stderr).toMatch(/password: must be at least 8 characters/);

    const badPrefix = await admin(
      'create-org',
      '--name',
      'Y',
      '--email',
      'y@example.com',
      '--password',
      'long enough pw',
    );
    const wrong = await admin('revoke-key', '--org', badPrefix.stdout, '--key-prefix', 'svc_live_ZZZZZZZZ');
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/No active API key/);
  }, 60_000);
});
