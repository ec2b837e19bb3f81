import { randomBytes } from 'node:crypto';
import { Keyring } from '../crypto/keyring.js';
import type { Db } from './database.js';
import { transaction } from './transaction.js';

/**
 * Keys of this installation (for HMAC-signed URLs, CSRF tokens, cursors and the like), created on
 * first use and kept in the database so that every process of one installation signs and verifies
 * with the same key. They are stored encrypted with the installation's keyring, each bound to its
 * name; a key stored in clear by an earlier version is encrypted the first time it is read.
 */
export class InstanceSecrets {
  private readonly loaded = new Map<string, Promise<Buffer>>();

  constructor(
    private readonly db: Db,
    private readonly keyring: Keyring,
  ) {}

  get(name: string): Promise<Buffer> {
    let secret = this.loaded.get(name);
    if (!secret) {
      secret = this.load(name);
      this.loaded.set(name, secret);
      secret.catch(() => this.loaded.delete(name));
    }
    return secret;
  }

  private async load(name: string): Promise<Buffer> {
    const context = contextOf(name);
    await this.db
      .insertInto('instance_secrets')
      .values({ name, value: this.keyring.encrypt(randomBytes(32).toString('base64url'), context) })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.db
      .selectFrom('instance_secrets')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    if (Keyring.isEncrypted(row.value)) return Buffer.from(this.keyring.decrypt(row.value, context), 'base64url');
    // Stored in clear by an earlier version: encrypted now, unless another process did it first.
    await this.db
      .updateTable('instance_secrets')
      .set({ value: this.keyring.encrypt(row.value, context) })
      .where('name', '=', name)
      .where('value', '=', row.value)
      .execute();
    return Buffer.from(row.value, 'base64url');
  }
}

/**
 * Encrypts every instance key with the keyring's current key (those in clear included); how many
 * values were written.
 */
export async function reencryptInstanceSecrets(db: Db, keyring: Keyring): Promise<number> {
  return transaction(db, async (trx) => {
    const rows = await trx.selectFrom('instance_secrets').select(['name', 'value']).forUpdate().execute();
    let changed = 0;
    for (const row of rows) {
      if (Keyring.keyIdOf(row.value) === keyring.currentKeyId) continue;
      const context = contextOf(row.name);
      const plain = Keyring.isEncrypted(row.value) ? keyring.decrypt(row.value, context) : row.value;
      await trx
        .updateTable('instance_secrets')
        .set({ value: keyring.encrypt(plain, context) })
        .where('name', '=', row.name)
        .execute();
      changed += 1;
    }
    return changed;
  });
}

function contextOf(name: string): string {
  return `instance_secrets:${name}`;
}
