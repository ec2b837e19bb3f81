import { createHash, timingSafeEqual } from 'node:crypto';

// RFC 7636 §4.1-4.2: a verifier is 43-128 unreserved characters; the S256 challenge is
// BASE64URL(SHA-256(verifier)), which this check also accepts in its 43-character form.
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

export function isWellFormedPkceValue(value: string): boolean {
  return PKCE_VALUE.test(value);
}

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

export function verifierMatchesChallenge(verifier: string, challenge: string): boolean {
  if (!isWellFormedPkceValue(verifier)) return false;
  const actual = Buffer.from(s256(verifier));
  const expected = Buffer.from(challenge);
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
