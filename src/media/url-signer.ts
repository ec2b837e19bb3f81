import { createHmac, timingSafeEqual } from 'node:crypto';

/** HMAC-SHA256 signatures of the local storage's URLs, with a key of this installation. */
export class UrlSigner {
  constructor(private readonly key: Buffer) {}

  sign(parts: readonly string[]): string {
    return createHmac('sha256', this.key).update(parts.join('\n')).digest('base64url');
  }

  /** Compares in constant time, so a forger cannot learn the signature byte by byte from response times. */
  verify(parts: readonly string[], signature: string): boolean {
    const expected = Buffer.from(this.sign(parts));
    const given = Buffer.from(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
