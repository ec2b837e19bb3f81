import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn from the CSPRNG a few kilobytes at a time and each used once: a call of
// randomBytes per id cost a request id more CPU than the id itself (crypto.randomUUID pools the same way).
const POOL_SIZE = 4096;
let pool = Buffer.alloc(0);
let taken = 0;

function randomByte(): number {
  if (taken === pool.length) {
    pool = randomBytes(POOL_SIZE);
    taken = 0;
  }
  const byte = pool[taken]!;
  // Spent bytes are cleared, so no byte of an id or secret already handed out stays in the pool.
  pool[taken++] = 0;
  return byte;
}

/** `length` base62 characters from the CSPRNG, without modulo bias. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    // 248 = 4 * 62: bytes at or above it would favour the first characters.
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

export function toBase62(value: number, width: number): string {
  let out = '';
  let rest = value;
  do {
    out = ALPHABET[rest % 62] + out;
    rest = Math.floor(rest / 62);
  } while (rest > 0);
  return out.padStart(width, '0');
}

export type IdPrefix =
  | 'org'
  | 'usr'
  | 'key'
  | 'invite'
  | 'ch'
  | 'ser'
  | 'post'
  | 'grp'
  | 'med'
  | 'upl'
  | 'app'
  | 'ses'
  | 'grant'
  | 'authz'
  | 'code'
  | 'tok'
  | 'rtok'
  | 'req'
  | 'rel'
  | 'conn'
  | 'rev'
  | 'whk'
  | 'msg'
  | 'mapp'
  | 'aud';

/** A record id: a type prefix and 20 random base62 characters (about 119 bits), e.g. `post_4Zc…`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(20)}`;
}
