import { describe, expect, it } from 'vitest';
import { nextStep } from '../src/publisher/next-step.js';

// What the publisher does after a run of an attempt: a pure function of the run's result, what the
// attempt recorded and the time, tested without a database.
const NOW = new Date('2026-11-21T12:00:00.000Z');
const BASE_MS = 5000;
const began = (msAgo: number) => ({ retries: 0, progressedAt: new Date(NOW.getTime() - msAgo) });
const after = (ms: number) => new Date(NOW.getTime() + ms);

describe('nextStep', () => {
  it('records a publication or a refusal as it ended', () => {
    const published = { status: 'published', releaseId: 'rel_1', releaseUrl: 'https://example.org/1' } as const;
    expect(nextStep(published, undefined, NOW, BASE_MS)).toEqual(published);
    const failed = { status: 'failed', code: 'rejected_by_network', message: 'No.', logId: 'log_1' } as const;
    expect(nextStep(failed, began(0), NOW, BASE_MS)).toEqual(failed);
  });

  it('tries a passing failure again after the retry base × 1, 6, 24, 120 and 360, then fails it', () => {
    const failure = { status: 'retry', reason: 'the network answered 503', maybeDelivered: false } as const;
    const waits = [0, 1, 2, 3, 4].map((retries) => {
      const step = nextStep(failure, { ...began(0), retries }, NOW, BASE_MS);
      expect(step).toMatchObject({ status: 'retry', reason: 'the network answered 503' });
      return (step as { at: Date }).at.getTime() - NOW.getTime();
    });
    expect(waits).toEqual([1, 6, 24, 120, 360].map((factor) => factor * BASE_MS));
    expect(nextStep(failure, { ...began(0), retries: 5 }, NOW, BASE_MS)).toEqual({
      status: 'failed',
      code: 'provider_unavailable',
      message: 'The network kept failing (the network answered 503); schedule the post again later.',
    });
  });

  it('waits as long as the network asks when that is longer, and keeps the log id', () => {
    const limited = {
      status: 'retry',
      reason: 'rate limited',
      maybeDelivered: false,
      retryAfterSeconds: 60,
      logId: 'log_2',
    } as const;
    expect(nextStep(limited, undefined, NOW, BASE_MS)).toEqual({
      status: 'retry',
      at: after(60_000),
      reason: 'rate limited',
      logId: 'log_2',
    });
    expect(nextStep({ ...limited, retryAfterSeconds: 1 }, undefined, NOW, BASE_MS)).toMatchObject({
      at: after(BASE_MS),
    });
  });

  it('fails as outcome_unknown a post that may have reached the network when the failures last', () => {
    const silent = { status: 'retry', reason: 'no answer', maybeDelivered: true } as const;
    expect(nextStep(silent, { ...began(0), retries: 4 }, NOW, BASE_MS)).toMatchObject({ status: 'retry' });
    const step = nextStep(silent, { ...began(0), retries: 5 }, NOW, BASE_MS);
    expect(step).toMatchObject({ status: 'failed', code: 'outcome_unknown' });
    expect((step as { message: string }).message).toContain('the network kept failing: no answer');
  });

  it('waits for a publishing limit to free however long it takes, and counts a day from the last step', () => {
    const overLimit = { status: 'pending', checkAgainInSeconds: 3600, forQuota: true } as const;
    expect(nextStep(overLimit, began(30 * 24 * 3_600_000), NOW, BASE_MS)).toEqual({
      status: 'pending',
      at: after(3_600_000),
    });
    // The attempt began two days ago, waited for the limit, and made its container an hour ago.
    const processing = { status: 'pending', checkAgainInSeconds: 30 } as const;
    expect(nextStep(processing, began(3_600_000), NOW, BASE_MS)).toEqual({ status: 'pending', at: after(30_000) });
  });

  it('asks again about a post the network is processing, and gives up a day after it was sent', () => {
    const processing = { status: 'pending', checkAgainInSeconds: 30 } as const;
    expect(nextStep(processing, began(3_600_000), NOW, BASE_MS)).toEqual({ status: 'pending', at: after(30_000) });
    expect(nextStep(processing, undefined, NOW, BASE_MS)).toEqual({ status: 'pending', at: after(30_000) });
    expect(nextStep(processing, began(24 * 3_600_000 + 1), NOW, BASE_MS)).toMatchObject({
      status: 'failed',
      code: 'outcome_unknown',
    });
  });
});
