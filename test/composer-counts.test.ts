import { describe, expect, it } from 'vitest';
import { BLUESKY_CONTENT_LIMIT } from '../src/providers/bluesky/rules.js';
import { X_CONTENT_LIMIT } from '../src/providers/x/rules.js';
import { countText, fittingLength } from '../src/web/composer-counts.js';

describe('where the composer’s preview cuts a text that is too long', () => {
  it('keeps a text that fits whole', () => {
    expect(fittingLength(X_CONTENT_LIMIT, 'Short')).toBe(5);
    expect(fittingLength(BLUESKY_CONTENT_LIMIT, '')).toBe(0);
  });

  it('cuts at the limit as the network counts: X weighs CJK characters and URLs', () => {
    expect(fittingLength(X_CONTENT_LIMIT, 'a'.repeat(300))).toBe(280);
    // Each of these weighs 2 at X.
    expect(fittingLength(X_CONTENT_LIMIT, '日'.repeat(200))).toBe(140);
    // A URL weighs 23 however long it is: the text after it is what is cut.
    const text = `https://example.org/${'p'.repeat(100)} ${'a'.repeat(300)}`;
    const fit = fittingLength(X_CONTENT_LIMIT, text);
    expect(countText(X_CONTENT_LIMIT, text.slice(0, fit))).toBe(280);
    expect(fit).toBe(121 + 256);
  });

  it('never splits a character as a reader sees it: Bluesky counts graphemes', () => {
    const thumb = '👍🏽';
    const fit = fittingLength(BLUESKY_CONTENT_LIMIT, thumb.repeat(301));
    expect(fit).toBe(300 * thumb.length);
    expect(fittingLength(BLUESKY_CONTENT_LIMIT, `${'a'.repeat(299)}${thumb}${thumb}`)).toBe(299 + thumb.length);
  });
});
