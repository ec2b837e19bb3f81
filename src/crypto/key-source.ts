import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { systemClock, type Clock } from '../core/clock.js';
import { ConfigError } from '../core/config.js';
import { KEY_ID, Keyring, type EncryptionKey } from './keyring.js';

/** Where an installation without ENCRYPTION_KEY keeps its keys: in its data directory, for its owner only. */
export const KEY_FILE = 'encryption-keys';

/**
 * Reads `ENCRYPTION_KEY`: one or more keys separated by commas, the first one encrypting new values,
 * each 32 bytes in base64 or 64 hex digits, optionally named `id:key` (otherwise its id is the start
 * of its SHA-256). Errors name the problem, never the key.
 */
export function parseEncryptionKeys(text: string, source = 'ENCRYPTION_KEY'): EncryptionKey[] {
  const keys = text
    .split(/[,\n]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0 && !entry.startsWith('#'))
    .map((entry, index) => {
      const colon = entry.indexOf(':');
      const [id, encoded] = colon === -1 ? [undefined, entry] : [entry.slice(0, colon), entry.slice(colon + 1)];
      if (id !== undefined && !KEY_ID.test(id))
        throw new ConfigError(`${source}: key ${index + 1} has an id that is not 1 to 32 letters, digits, "-" or "_"`);
      const key = /^[0-9a-fA-F]{64}$/.test(encoded) ? Buffer.from(encoded, 'hex') : Buffer.from(encoded, 'base64');
      if (key.length !== 32 || !/^[A-Za-z0-9+/_=-]+$/.test(encoded)) {
        throw new ConfigError(
          `${source}: key ${index + 1} is not 32 bytes in base64 or 64 hex digits ` +
            '(make one with: openssl rand -base64 32)',
        );
      }
      return { id: id ?? createHash('sha256').update(key).digest('hex').slice(0, 8), key };
    });
  if (keys.length === 0) throw new ConfigError(`${source} holds no key`);
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new ConfigError(`${source} names one key id twice`);
  return keys;
}

export interface KeySource {
  keyring: Keyring;
  /** `env` when ENCRYPTION_KEY gave the keys, else the key file of the data directory. */
  from: 'env' | 'file';
  file?: string;
}

/**
 * The keys this process encrypts with: ENCRYPTION_KEY when set; otherwise the data directory's key
 * file, created with one new key on first start (mode 0600). Several processes on one database must
 * share their keys, through ENCRYPTION_KEY or the same file.
 */
export function loadKeys(
  options: { encryptionKey: string | undefined; dataDir: string },
  clock: Clock = systemClock,
): KeySource {
  if (options.encryptionKey) return { keyring: new Keyring(parseEncryptionKeys(options.encryptionKey)), from: 'env' };
  const file = path.join(options.dataDir, KEY_FILE);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(options.dataDir, { recursive: true });
    try {
      fs.writeFileSync(file, keyLine(clock), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      // Another process created it a moment ago: use that one.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  const mode = fs.statSync(file).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new ConfigError(
      `${file} is readable by others (mode ${mode.toString(8)}): it holds the encryption keys; run chmod 600 ${file}`,
    );
  }
  return { keyring: new Keyring(parseEncryptionKeys(fs.readFileSync(file, 'utf8'), file)), from: 'file', file };
}

/** Puts a new key first in the key file, keeping the others so that older values still decrypt. */
export function addKeyToFile(file: string, clock: Clock): void {
  const current = fs.readFileSync(file, 'utf8');
  const next = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(next, keyLine(clock) + current, { mode: 0o600 });
  fs.renameSync(next, file);
}

/** A new key, named after the day it was made. */
function keyLine(clock: Clock): string {
  const id = `k${clock.now().toISOString().slice(0, 10).replaceAll('-', '')}-${randomBytes(3).toString('hex')}`;
  return `${id}:${randomBytes(32).toString('base64')}\n`;
}
