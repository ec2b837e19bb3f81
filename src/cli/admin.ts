import { parseArgs } from 'node:util';
import path from 'node:path';
import { createApiKey, findApiKeyByPrefix, listApiKeys, maskApiKey, revokeApiKey } from '../accounts/api-keys.js';
import { createInvitation, invitationPath } from '../accounts/invitations.js';
import { issueMailToken } from '../accounts/mail-tokens.js';
import { createOrganizationWithOwner, findOrganization, findUserByEmail } from '../accounts/organizations.js';
import { isRole } from '../core/roles.js';
import { addChannel } from '../channels/channels.js';
import { ConfigError, loadConfig, type Config } from '../core/config.js';
import { PROVIDERS, type Provider } from '../core/contract.js';
import { DomainError, NotFoundError } from '../core/errors.js';
import { DatabaseBusyError, DatabaseVersionError, openDatabase, type Db } from '../db/database.js';
import { EMBEDDED_TEMPLATE_PATH } from '../db/embedded-template.js';
import { reencryptInstanceSecrets } from '../db/instance-secrets.js';
import { reencryptAccountSecrets } from '../providers/account-credentials.js';
import { reencryptMastodonApps } from '../providers/mastodon/instance.js';
import { reencryptWebhookSecrets } from '../webhooks/endpoints.js';
import { migrateToLatest } from '../db/migrate.js';
import { addKeyToFile, loadKeys } from '../crypto/key-source.js';
import { systemClock } from '../core/clock.js';
import { UnknownKeyError } from '../crypto/keyring.js';
import { backup, BackupError, restore } from '../backup.js';

const USAGE = `Usage: npm run -s admin -- <command> [options]

Commands:
  create-org   --name NAME --email EMAIL --password PASSWORD [--user-name NAME]
               Creates an organization owned by the user with EMAIL (created if new;
               an existing user must give their password). Prints the organization id.
  create-key   --org ORG_ID [--name LABEL]
               Creates an API key and prints it. It is shown this once only.
  list-keys    --org ORG_ID
               Lists the organization's API keys, masked, with their last use.
  revoke-key   --org ORG_ID --key-prefix PREFIX
               Revokes the key whose shown prefix (e.g. svc_live_Ab12Cd34) or whole value is PREFIX.
  reset-password --email EMAIL
               Prints a link that lets the user with EMAIL choose a new password (once, within
               30 minutes; every session of the user ends when it is used): what the
               "Forgot password?" mail carries, for an installation that sends no mail.
  invite       --org ORG_ID --email EMAIL [--role admin|editor|contributor|viewer]
               Invites EMAIL to the organization (as editor by default) and prints the link to
               accept it, single-use, good for 7 days. It is shown this once only.
  add-channel  --org ORG_ID --provider ${PROVIDERS.join('|')} --name NAME [--username HANDLE]
               Adds a channel to the organization and prints its id.
  rotate-encryption-key
               Re-encrypts every value stored encrypted with the first key of ENCRYPTION_KEY,
               or, without ENCRYPTION_KEY, with a new key it puts first in DATA_DIR/encryption-keys.
               Restart the server's processes afterwards.
  backup FILE  Writes the embedded database and the local media files to FILE (a new file), with the
               server stopped. Not the encryption keys: keep them to restore. With DATABASE_URL, use
               PostgreSQL's pg_dump instead (docs/operations.md).
  restore FILE Restores a backup into DATA_DIR, which must hold no database yet. Start the server
               afterwards with the same encryption keys.

The command reads the same configuration as the server (DATABASE_URL, DATA_DIR, ENCRYPTION_KEY).`;

class UsageError extends Error {}

type Options = Record<string, string | undefined>;

function required(options: Options, name: string): string {
  const value = options[name];
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

async function organizationId(db: Db, options: Options): Promise<string> {
  const id = required(options, 'org');
  if (!(await findOrganization(db, id))) throw new NotFoundError(`There is no organization ${id}.`);
  return id;
}

const COMMANDS: Record<string, (db: Db, options: Options, config: Config) => Promise<string>> = {
  'create-org': async (db, options) => {
    const { organization } = await createOrganizationWithOwner(db, {
      organizationName: required(options, 'name'),
      email: required(options, 'email'),
      password: required(options, 'password'),
      userName: options['user-name'],
    });
    return organization.id;
  },

  'create-key': async (db, options) => {
    const { secret } = await createApiKey(db, await organizationId(db, options), options.name ?? 'API key');
    return secret;
  },

  invite: async (db, options, config) => {
    const role = options.role ?? 'editor';
    if (!isRole(role) || role === 'owner') throw new UsageError('--role must be admin, editor, contributor or viewer');
    const organization = await organizationId(db, options);
    const { token } = await createInvitation(
      db,
      { organizationId: organization, role: 'owner', userId: null },
      { email: required(options, 'email'), role },
      systemClock.now(),
    );
    return `${config.publicUrl}${invitationPath(token)}`;
  },

  'list-keys': async (db, options) => {
    const keys = await listApiKeys(db, await organizationId(db, options));
    return keys
      .map((key) =>
        [
          key.id,
          maskApiKey(key),
          key.name,
          `created ${key.created_at.toISOString()}`,
          key.last_used_at ? `last used ${key.last_used_at.toISOString()}` : 'never used',
          key.revoked_at ? `revoked ${key.revoked_at.toISOString()}` : 'active',
        ].join('\t'),
      )
      .join('\n');
  },

  'revoke-key': async (db, options) => {
    const org = await organizationId(db, options);
    const key = await findApiKeyByPrefix(db, org, required(options, 'key-prefix'));
    await revokeApiKey(db, org, key.id, systemClock.now(), 'operator');
    return `revoked ${maskApiKey(key)}`;
  },

  'reset-password': async (db, options, config) => {
    const email = required(options, 'email');
    const user = await findUserByEmail(db, email);
    if (!user) throw new NotFoundError(`There is no user with the email ${email}.`);
    const token = await issueMailToken(
      db,
      { userId: user.id, purpose: 'password_reset', email: user.email },
      systemClock.now(),
    );
    return `${config.publicUrl}/password/reset/${token}`;
  },

  'add-channel': async (db, options) => {
    const provider = required(options, 'provider');
    if (!(PROVIDERS as readonly string[]).includes(provider)) {
      throw new UsageError(`--provider must be one of ${PROVIDERS.join(', ')}`);
    }
    const channel = await addChannel(db, {
      organization_id: await organizationId(db, options),
      provider: provider as Provider,
      name: required(options, 'name'),
      username: options.username ?? null,
      picture: null,
    });
    return channel.id;
  },

  'rotate-encryption-key': async (db, _options, config) => {
    let keys = loadKeys({ encryptionKey: config.encryptionKey, dataDir: config.dataDir });
    if (keys.from === 'file') {
      addKeyToFile(keys.file!, systemClock);
      keys = loadKeys({ encryptionKey: undefined, dataDir: config.dataDir });
    }
    const written =
      (await reencryptInstanceSecrets(db, keys.keyring)) +
      (await reencryptAccountSecrets(db, keys.keyring)) +
      (await reencryptMastodonApps(db, keys.keyring)) +
      (await reencryptWebhookSecrets(db, keys.keyring));
    const key = keys.keyring.currentKeyId;
    return keys.from === 'env'
      ? `Re-encrypted ${written} values with the key "${key}". No value uses another key now: ` +
          `the others may be removed from ENCRYPTION_KEY once every process runs with "${key}" first.`
      : `Re-encrypted ${written} values with the new key "${key}", now first in ${keys.file} ` +
          '(the older keys stay there). Restart the server to use it.';
  },
};

/** Backups of the embedded database; a PostgreSQL server's database is PostgreSQL's tools' to back up. */
const ARCHIVE_COMMANDS: Record<string, (file: string, config: Config) => Promise<string>> = {
  backup: (file, config) => {
    if (config.databaseUrl) throw new BackupError(POSTGRES_BACKUP);
    return backup(config.dataDir, path.resolve(file));
  },
  restore: (file, config) => {
    if (config.databaseUrl) throw new BackupError(POSTGRES_BACKUP);
    return restore(config.dataDir, path.resolve(file));
  },
};

const POSTGRES_BACKUP =
  'DATABASE_URL is set: the database is on a PostgreSQL server, which this command does not back up or ' +
  "restore. Use PostgreSQL's own tools (pg_dump --format=custom, pg_restore; see docs/operations.md), " +
  'and back up the media files where they are (the S3 bucket, or DATA_DIR/media).';

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 64;
  }
  const action = COMMANDS[command];
  const archive = ARCHIVE_COMMANDS[command];
  if (!action && !archive) {
    console.error(`Unknown command "${command}".\n\n${USAGE}`);
    return 64;
  }
  let options: Options;
  let positionals: string[];
  try {
    const parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        email: { type: 'string' },
        password: { type: 'string' },
        'user-name': { type: 'string' },
        org: { type: 'string' },
        'key-prefix': { type: 'string' },
        role: { type: 'string' },
        provider: { type: 'string' },
        username: { type: 'string' },
      },
      strict: true,
    });
    options = parsed.values;
    positionals = parsed.positionals;
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${USAGE}`);
    return 64;
  }

  if (archive) {
    if (positionals.length !== 1 || Object.keys(options).length > 0) {
      throw new UsageError(`${command} takes one argument, the backup's file name`);
    }
    console.log(await archive(positionals[0]!, loadConfig()));
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`Unexpected argument "${positionals[0]}"`);
  const config = loadConfig();
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    preparedStatements: config.databasePreparedStatements,
    dataDir: config.dataDir,
    template: EMBEDDED_TEMPLATE_PATH,
    poolSize: 2,
  });
  try {
    await migrateToLatest(database.db);
    const output = await action!(database.db, options, config);
    if (output) console.log(output);
    return 0;
  } finally {
    await database.close();
  }
}

run(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      process.exit(64);
    }
    if (
      error instanceof ConfigError ||
      error instanceof UnknownKeyError ||
      error instanceof DatabaseBusyError ||
      error instanceof DatabaseVersionError ||
      error instanceof BackupError ||
      error instanceof DomainError
    ) {
      const details =
        error instanceof DomainError && error.details
          ? `\n${error.details.map((d) => `  - ${d.path}: ${d.message}`).join('\n')}`
          : '';
      console.error(`${error.message}${details}`);
      process.exit(error instanceof DatabaseBusyError ? 75 : error instanceof DatabaseVersionError ? 65 : 1);
    }
    console.error(error);
    process.exit(1);
  },
);
