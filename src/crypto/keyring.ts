import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** A 256-bit key and the id stored with every value it encrypts. */
export interface EncryptionKey {
  id: string;
  key: Buffer;
}

/** A value encrypted with a key this process does not have. */
export class UnknownKeyError extends Error {
  constructor(readonly keyId: string) {
    super(`a value is encrypted with the key "${keyId}", which this process does not have`);
  }
}

/** A value that does not decrypt: altered, cut, or moved from where it was written. */
export class DecryptionError extends Error {}

const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * Encryption at rest for the secrets this server must use again (a connected account's tokens, its
 * own signing keys), with AES-256-GCM. A value is stored as `enc:v1:<key id>:<iv>:<ciphertext+tag>`
 * (base64url): the key id lets several keys be configured at once, new values taking the first and
 * older ones still decrypting, so a key can be rotated. Each value is bound to its place (`context`,
 * e.g. the row it is stored in) as associated data, so a value copied to another row does not decrypt.
 */
export class Keyring {
  private readonly byId: Map<string, Buffer>;

  constructor(readonly keys: readonly EncryptionKey[]) {
    if (keys.length === 0) throw new Error('a keyring needs at least one key');
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
    for (const { id, key } of keys) {
      if (!KEY_ID.test(id)) throw new Error(`key ids are 1 to 32 letters, digits, "-" or "_": "${id}"`);
      if (key.length !== 32) throw new Error(`the key "${id}" is not 256 bits long`);
    }
  }

  /** The key new values are encrypted with. */
  get currentKeyId(): string {
    return this.keys[0]!.id;
  }

  encrypt(plaintext: string, context: string): string {
    const { id, key } = this.keys[0]!;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context));
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}${id}:${iv.toString('base64url')}:${sealed.toString('base64url')}`;
  }

  decrypt(value: string, context: string): string {
    const parts = Keyring.isEncrypted(value) ? value.slice(PREFIX.length).split(':') : [];
    if (parts.length !== 3) throw new DecryptionError('not an encrypted value');
    const [id, ivText, sealedText] = parts as [string, string, string];
    const key = this.byId.get(id);
    if (!key) throw new UnknownKeyError(id);
    const iv = Buffer.from(ivText, 'base64url');
    const sealed = Buffer.from(sealedText, 'base64url');
    if (iv.length !== IV_BYTES || sealed.length < TAG_BYTES)
      throw new DecryptionError('an encrypted value is cut short');
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new DecryptionError('an encrypted value does not decrypt: it was altered or moved');
    }
  }

  /**
   * `value` encrypted again with the current key (key rotation), or `undefined` when it is encrypted
   * with the current key already.
   */
  reencrypted(value: string, context: string): string | undefined {
    if (Keyring.keyIdOf(value) === this.currentKeyId) return undefined;
    return this.encrypt(this.decrypt(value, context), context);
  }

  /** The id of the key `value` is encrypted with. */
  static keyIdOf(value: string): string | undefined {
    return Keyring.isEncrypted(value) ? value.slice(PREFIX.length).split(':')[0] : undefined;
  }

  static isEncrypted(value: string): boolean {
    return value.startsWith(PREFIX);
  }
}
