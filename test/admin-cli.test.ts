import { describe, expect, it } from 'vitest';
import { publicApi } from './support/api.js';
import { TEST_DATABASE_URL } from './support/database.js';
import { freePort, spawnBuilt, untilExit } from './support/processes.js';
import { scratchInstallation } from './support/scratch.js';
import { scaled } from './support/timeouts.js';

// An installation of its own, as an operator's: the CLI and the server migrate its database themselves.
const installation = scratchInstallation('admin-cli');
const admin = installation.admin;

describe('admin CLI', () => {
  it(
    'creates an organization, a key and a channel that the API then serves, and revokes the key',
    async () => {
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

      // Without SMTP, the operator makes the link a "Forgot password?" mail would carry.
      const reset = await admin('reset-password', '--email', 'owner@example.com');
      expect(reset.code, reset.stderr).toBe(0);
      expect(reset.stdout).toMatch(/^https?:\/\/[^/]+\/password\/reset\/[0-9A-Za-z]{43}$/);
      const nobody = await admin('reset-password', '--email', 'nobody@example.com');
      expect(nobody.code).toBe(1);
      expect(nobody.stderr).toContain('There is no user with the email nobody@example.com.');

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

      const invited = await admin('invite', '--org', org.stdout, '--email', 'New@Example.com', '--role', 'viewer');
      expect(invited.code, invited.stderr).toBe(0);
      expect(invited.stdout).toMatch(/^https?:\/\/[^/]+\/invitations\/accept\?token=inv_[0-9A-Za-z]{30}$/);
      const owner = await admin('invite', '--org', org.stdout, '--email', 'new@example.com', '--role', 'owner');
      expect(owner.code).not.toBe(0);

      const server = await installation.start();
      try {
        const { data, response } = await publicApi(server, { Authorization: `Bearer ${key.stdout}` }).GET(
          '/public/v1/channels',
        );
        expect(response.status).toBe(200);
        expect(data?.data).toEqual([expect.objectContaining({ id: channel.stdout, name: 'Try it' })]);
        const resetPage = await fetch(`${server.baseUrl}${new URL(reset.stdout).pathname}`);
        expect(resetPage.status).toBe(200);
        expect(await resetPage.text()).toContain('Choose a new password');

        if (!TEST_DATABASE_URL) {
          // The embedded database belongs to the server while it runs: the CLI is refused and changes nothing.
          const refused = await admin('create-key', '--org', org.stdout);
          expect(refused.code).toBe(75);
          expect(refused.stderr).toMatch(/in use by another process/);
          expect(refused.stdout).toBe('');

          const second = await untilExit(spawnBuilt('start', [], installation.env({ PORT: String(await freePort()) })));
          expect(second.code).toBe(75);
          expect(second.stderr).toMatch(/in use by another process/);
        }
      } finally {
        expect(await server.stop()).toBe(0);
      }

      const revoked = await admin('revoke-key', '--org', org.stdout, '--key-prefix', key.stdout.slice(0, 17));
      expect(revoked.code, revoked.stderr).toBe(0);

      const restarted = await installation.start();
      try {
        const { error, response } = await publicApi(restarted, { Authorization: `Bearer ${key.stdout}` }).GET(
          '/public/v1/channels',
        );
        expect(response.status).toBe(401);
        expect(error?.error.code).toBe('unauthorized');
      } finally {
        await restarted.stop();
      }
    },
    scaled(120_000),
  );

  it(
    'explains its usage and refuses bad input with a non-zero exit',
    async () => {
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
    },
    scaled(60_000),
  );
});
