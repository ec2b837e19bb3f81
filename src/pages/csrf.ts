import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/database.js';
import { instanceSecret } from '../db/instance-secrets.js';

/**
 * CSRF tokens are an HMAC, under a key of this installation, of what the browser holds: the session
 * id once signed in, or a random cookie before that (the sign-up and log-in forms; OWASP's "signed
 * double-submit cookie"). A token from another session, another browser or a forged page never
 * matches, and nothing needs to be stored per form.
 */
export class CsrfTokens {
  private key: Promise<Buffer> | undefined;

  constructor(private readonly db: Db) {}

  private secret(): Promise<Buffer> {
    this.key ??= instanceSecret(this.db, 'csrf').catch((error: unknown) => {
      this.key = undefined;
      throw error;
    });
    return this.key;
  }

  async token(binding: string): Promise<string> {
    return createHmac('sha256', await this.secret()).update(binding).digest('base64url');
  }

  async verify(binding: string, given: unknown): Promise<boolean> {
    if (typeof given !== 'string' || given.length === 0) return false;
    const expected = Buffer.from(await this.token(binding));
    const actual = Buffer.from(given);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }
}
