import type { Outcome } from '../providers/publishing-contract.js';
import { outcomeUnknown, type RunResult } from './publish.js';

/** Passing failures an attempt survives before it fails with `provider_unavailable`: their waits, × the retry base. */
const RETRY_FACTORS = [1, 6, 24, 120, 360];
// A network still processing what it was last sent this long after is given up on as outcome_unknown.
const PENDING_LIMIT_MS = 24 * 3_600_000;

/**
 * What the attempt recorded so far: the passing failures it survived, and when it last moved on (a step
 * recorded, or a passing failure counted).
 */
export interface AttemptSoFar {
  retries: number;
  progressedAt: Date;
}

/**
 * What the publisher does after a run of an attempt: record how it ended (published or failed), try
 * again at `at` after a passing failure (counted), or ask the network again at `at` about a post it
 * is still processing.
 */
export type NextStep =
  Outcome | { status: 'retry'; at: Date; reason: string; logId?: string } | { status: 'pending'; at: Date };

/**
 * What comes next, from how the run ended, what the attempt recorded (`undefined` when nothing was)
 * and the time. A passing failure waits longer each time (the retry base × 1, 6, 24, 120, 360, or
 * longer when the network asks); after the last it fails, as `outcome_unknown` when the post may
 * have reached the network. A post the network is still processing a day after the attempt last
 * moved on fails as `outcome_unknown` too; a wait for the network's publishing limit to free never
 * does (the post stays to be published when it frees, however long another app keeps it used), nor
 * does it shorten the day a processing that follows it has.
 */
export function nextStep(
  result: RunResult,
  attempt: AttemptSoFar | undefined,
  now: Date,
  retryBaseMs: number,
): NextStep {
  const retries = attempt?.retries ?? 0;
  const later = (ms: number) => new Date(now.getTime() + ms);
  switch (result.status) {
    case 'published':
    case 'failed':
      return result;
    case 'retry': {
      if (retries >= RETRY_FACTORS.length) {
        if (result.maybeDelivered) return outcomeUnknown(`the network kept failing: ${result.reason}`, result.logId);
        return {
          status: 'failed',
          code: 'provider_unavailable',
          message: `The network kept failing (${result.reason}); schedule the post again later.`,
          ...(result.logId ? { logId: result.logId } : {}),
        };
      }
      const waitMs = Math.max(RETRY_FACTORS[retries]! * retryBaseMs, (result.retryAfterSeconds ?? 0) * 1000);
      return {
        status: 'retry',
        at: later(waitMs),
        reason: result.reason,
        ...(result.logId ? { logId: result.logId } : {}),
      };
    }
    case 'pending':
      if (!result.forQuota && attempt && now.getTime() - attempt.progressedAt.getTime() > PENDING_LIMIT_MS) {
        return {
          status: 'failed',
          code: 'outcome_unknown',
          message:
            'The network was still processing the post a day after it was sent. ' +
            'Check the channel before scheduling it again.',
        };
      }
      return { status: 'pending', at: later(result.checkAgainInSeconds * 1000) };
  }
}
