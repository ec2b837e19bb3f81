import { createHmac, timingSafeEqual } from 'node:crypto';
import type { InstanceSecrets } from '../db/instance-secrets.js';

/**
 * CSRF tokens are an HMAC, under a key of this installation, of what the browser holds: the session
 * id once signed in, or a random cookie before that (the sign-up and log-in forms; OWASP's "signed
 * double-submit cookie"). A token from another session, another browser or a forged page never
 * matches, and nothing needs to be stored per form.
 */
export class CsrfTokens {
  constructor(private readonly secrets: InstanceSecrets) {}

  private secret(): Promise<Buffer> {
    return this.secrets.get('csrf');
  }

  async token(binding: string): Promise<string> {
    return createHmac('sha256', await this.secret())
      .update(binding)
      .digest('base64url');
  }

  async verify(binding: string, given: unknown): Promise<boolean> {
    if (typeof given !== 'string' || given.length === 0) return false;
    const expected = Buffer.from(await this.token(binding));
    const actual = Buffer.from(given);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }
}
