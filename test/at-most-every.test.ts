import { describe, expect, it } from 'vitest';
import { AtMostEvery } from '../src/core/at-most-every.js';

describe('housekeeping paced to once a minute', () => {
  it('is due at first, then not again until the interval has passed', () => {
    const pace = new AtMostEvery(60_000);
    expect(pace.due(new Date('2026-12-01T10:00:00Z'))).toBe(true);
    expect(pace.due(new Date('2026-12-01T10:00:59.999Z'))).toBe(false);
    expect(pace.due(new Date('2026-12-01T10:01:00Z'))).toBe(true);
    expect(pace.due(new Date('2026-12-01T10:01:30Z'))).toBe(false);
  });

  it('is due at once when the clock went back, rather than waiting for it to catch up', () => {
    const pace = new AtMostEvery(60_000);
    expect(pace.due(Date.parse('2027-06-01T00:00:00Z'))).toBe(true);
    expect(pace.due(Date.parse('2026-12-01T10:00:00Z'))).toBe(true);
    expect(pace.due(Date.parse('2026-12-01T10:00:30Z'))).toBe(false);
  });
});
