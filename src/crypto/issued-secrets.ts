import { hash, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { randomBase62, toBase62 } from '../core/ids.js';

/**
 * Issued secrets (API keys, OAuth access and refresh tokens, client secrets, authorization codes) share one shape:
 * a prefix naming the kind, 24 base62 characters from the CSPRNG (about 142 bits) and a 6-character
 * checksum. The checksum lets a malformed or mistyped value be refused before any database read, and
 * the prefix lets secret scanners recognise a leaked credential.
 */
export type CredentialPrefix = 'svc_live_' | 'pos_' | 'pcs_' | 'pac_' | 'por_' | 'inv_';

const RANDOM_LENGTH = 24;
const CHECKSUM_LENGTH = 6;

function checksum(body: string): string {
  return toBase62(crc32(body), CHECKSUM_LENGTH);
}

export function generateCredential(prefix: CredentialPrefix): string {
  const body = prefix + randomBase62(RANDOM_LENGTH);
  return body + checksum(body);
}

const SHAPE = /^[0-9A-Za-z]+$/;

/** True when `value` has the shape and checksum of a credential of this kind. */
export function isWellFormedCredential(value: string, prefix: CredentialPrefix): boolean {
  if (value.length !== prefix.length + RANDOM_LENGTH + CHECKSUM_LENGTH || !value.startsWith(prefix)) return false;
  const rest = value.slice(prefix.length);
  if (!SHAPE.test(rest)) return false;
  const body = value.slice(0, -CHECKSUM_LENGTH);
  return checksum(body) === value.slice(-CHECKSUM_LENGTH);
}

/**
 * What is stored instead of a secret: its SHA-256, hex-encoded. Secrets carry enough entropy that no
 * salt or KDF is needed.
 */
export function hashSecret(value: string): string {
  // The one-shot form: every Public API request hashes its credential, and a Hash object per call cost more.
  return hash('sha256', value, 'hex');
}

export function secretMatchesHash(value: string, hash: string): boolean {
  const actual = Buffer.from(hashSecret(value), 'hex');
  const expected = Buffer.from(hash, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
