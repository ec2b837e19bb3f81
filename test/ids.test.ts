import { describe, expect, it } from 'vitest';
import { newId, randomBase62 } from '../src/core/ids.js';

describe('random ids', () => {
  it('are base62 of the asked length, never repeated, across many refills of the random pool', () => {
    const seen = new Set<string>();
    // 2,000 ids of 20 characters use about ten times the pool's 4,096 bytes.
    for (let i = 0; i < 2000; i++) {
      const id = newId('req');
      expect(id).toMatch(/^req_[0-9A-Za-z]{20}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(2000);
    expect(randomBase62(1)).toMatch(/^[0-9A-Za-z]$/);
    expect(randomBase62(5000)).toMatch(/^[0-9A-Za-z]{5000}$/);
  });

  it('use every character of the alphabet about equally', () => {
    const counts = new Map<string, number>();
    for (const character of randomBase62(62 * 1000)) counts.set(character, (counts.get(character) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // 1,000 expected each; a biased byte mapping (modulo without rejection) would push the first
    // characters near 1,250. The bounds are about seven standard deviations wide.
    for (const count of counts.values()) {
      expect(count).toBeGreaterThan(780);
      expect(count).toBeLessThan(1220);
    }
  });
});
