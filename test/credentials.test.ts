import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../src/accounts/passwords.js';
import {
  generateCredential,
  hashSecret,
  isWellFormedCredential,
  secretMatchesHash,
} from '../src/crypto/issued-secrets.js';
import { credentialFromHeader } from '../src/http/authenticate.js';

describe('issued credentials', () => {
  it('carry their prefix, at least 128 random bits and a checksum', () => {
    const key = generateCredential('svc_live_');
    expect(key).toMatch(/^svc_live_[0-9A-Za-z]{30}$/);
    expect(isWellFormedCredential(key, 'svc_live_')).toBe(true);
    const many = new Set(Array.from({ length: 1000 }, () => generateCredential('pos_')));
    expect(many.size).toBe(1000);
  });

  it('are refused when a character is changed, the prefix is wrong or the length is off', () => {
    const key = generateCredential('svc_live_');
    const flipped = key.slice(0, 12) + (key[12] === 'a' ? 'b' : 'a') + key.slice(13);
    expect(isWellFormedCredential(flipped, 'svc_live_')).toBe(false);
    expect(isWellFormedCredential(key, 'pos_')).toBe(false);
    expect(isWellFormedCredential(`${key}x`, 'svc_live_')).toBe(false);
    expect(isWellFormedCredential(key.replace('svc_live_', 'svc_test_'), 'svc_live_')).toBe(false);
    expect(isWellFormedCredential(`${key.slice(0, -7)}-${key.slice(-6)}`, 'svc_live_')).toBe(false);
  });

  it('are stored as a SHA-256 hash that matches only the original', () => {
    const key = generateCredential('pcs_');
    const hash = hashSecret(key);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).not.toContain(key.slice(4));
    expect(secretMatchesHash(key, hash)).toBe(true);
    expect(secretMatchesHash(generateCredential('pcs_'), hash)).toBe(false);
  });
});

describe('the Authorization header', () => {
  it('accepts the Bearer scheme in any case and the bare form', () => {
    expect(credentialFromHeader('Bearer abc')).toBe('abc');
    expect(credentialFromHeader('bEaReR abc')).toBe('abc');
    expect(credentialFromHeader('abc')).toBe('abc');
    expect(credentialFromHeader('  Bearer   abc  ')).toBe('abc');
  });

  it('yields nothing for other schemes, several values or an oversized header', () => {
    expect(credentialFromHeader('Basic abc def')).toBeUndefined();
    expect(credentialFromHeader('Bearer a b')).toBeUndefined();
    expect(credentialFromHeader(`Bearer ${'a'.repeat(10_000)}`)).toBeUndefined();
    expect(credentialFromHeader(undefined)).toBeUndefined();
  });
});

describe('passwords', () => {
  it('are hashed with scrypt and verified', async () => {
    const hash = await hashPassword('correct horse battery staple');
    expect(hash).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(await verifyPassword('correct horse battery staple', hash)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', hash)).toBe(false);
  });
});
