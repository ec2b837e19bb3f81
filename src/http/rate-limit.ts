import type { Clock } from '../core/clock.js';
import { createHash } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/database.js';

export interface RateLimitPolicy {
  /** Requests allowed per window. */
  max: number;
  windowSeconds: number;
}

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Seconds until the current window ends. */
  resetSeconds: number;
  allowed: boolean;
  /** The window this state was counted in, for `takeBack`. */
  windowStart: Date;
}

/** The window a hit at some instant counts in, for a statement that counts it (see `credentialResolver`). */
export interface LimitWindow {
  start: Date;
  /** The bucket of a key is this prefix and the key. */
  bucketPrefix: string;
}

// Windows are at most a day long (the configuration's limit): older than two days, a window is over for every limiter.
const KEEP_MS = 2 * 86_400_000;
// Keys can come from what a visitor typed (an email address, a client id in a Basic header): one that
// the database could not take as given (a B-tree index entry holds at most about 2.7 kB, and text
// cannot hold U+0000) is kept as its SHA-256.
const MAX_PLAIN_KEY_LENGTH = 200;

/**
 * The statement that counts a hit in a bucket's window and returns the window's count after it: the one
 * place a count goes up. The bucket is a value, or an expression over `from` when the caller's own
 * statement reads the bucket's key (the organization of the credential it looks up, see
 * `credentialResolver`); no bucket is counted when `from` has no row.
 */
export function countHit(
  bucket: string | RawBuilder<string>,
  windowStart: Date,
  from?: RawBuilder<unknown>,
): RawBuilder<{ count: number }> {
  return sql<{ count: number }>`insert into rate_limit_windows (bucket, window_start, count)
    select ${bucket}, ${windowStart}, 1${from ? sql` from ${from}` : sql``}
    on conflict (bucket, window_start) do update set count = rate_limit_windows.count + 1
    returning count`;
}

/**
 * A fixed-window counter per bucket (for the Public API, one bucket per organization), kept in the
 * database so that every server process counts against the same budget.
 */
export class RateLimiter {
  constructor(
    private readonly db: Db,
    /** Names this limiter's buckets, so limiters with other windows can share the table. */
    private readonly name: string,
    private readonly policy: RateLimitPolicy,
    private readonly clock: Clock,
  ) {}

  async hit(key: string): Promise<RateLimitState> {
    const now = this.clock.now();
    const window = this.window(now);
    const { rows } = await countHit(this.bucketOf(key), window.start).execute(this.db);
    return this.stateOf(rows[0]!.count, window, now);
  }

  /**
   * The window of a hit at `now`, for a statement of the caller's that counts it in the bucket of a key
   * it reads itself (an organization id: short, so stored as given, as `bucketOf` would).
   */
  window(now: Date): LimitWindow {
    const windowMs = this.policy.windowSeconds * 1000;
    return { start: new Date(Math.floor(now.getTime() / windowMs) * windowMs), bucketPrefix: `${this.name}:` };
  }

  /** What a window's count after a hit means for the request. */
  stateOf(count: number, window: LimitWindow, now: Date): RateLimitState {
    const end = window.start.getTime() + this.policy.windowSeconds * 1000;
    return {
      limit: this.policy.max,
      remaining: Math.max(0, this.policy.max - count),
      resetSeconds: Math.max(1, Math.ceil((end - now.getTime()) / 1000)),
      allowed: count <= this.policy.max,
      windowStart: window.start,
    };
  }

  /**
   * Takes back a hit that turned out not to count. Attempts whose outcome decides whether they count
   * (a failed log-in counts, a successful one does not) are hit before they are tried and taken back
   * after: checking the count first and hitting after the outcome would let any number of concurrent
   * attempts pass the check before the first of them is counted.
   */
  async takeBack(key: string, counted: RateLimitState): Promise<void> {
    await this.db
      .updateTable('rate_limit_windows')
      .set({ count: sql<number>`greatest(rate_limit_windows.count - 1, 0)` })
      .where('bucket', '=', this.bucketOf(key))
      .where('window_start', '=', counted.windowStart)
      .execute();
  }

  private bucketOf(key: string): string {
    const storable = key.length <= MAX_PLAIN_KEY_LENGTH && !key.includes('\u0000');
    const shown = storable ? key : `sha256:${createHash('sha256').update(key).digest('hex')}`;
    return `${this.name}:${shown}`;
  }
}

/** One limit an attempt counts against: its limiter and the bucket of this attempt. */
export interface AttemptLimit {
  limiter: RateLimiter;
  key: string;
}

/** The outcome of starting an attempt: refused by a limit, or under way until its result is known. */
export type Attempt =
  | { allowed: false; refusedBy: RateLimitState; states: RateLimitState[] }
  | {
      allowed: true;
      states: RateLimitState[];
      /** It succeeded, or must not count: the hits are taken back. */
      takeBack(): Promise<void>;
    };

/**
 * Throttles attempts whose outcome decides whether they count (a failed log-in or client
 * authentication counts, a successful one does not), against several limits at once (per account and
 * per address). Each attempt is counted against every limit before it is tried, and taken back when it
 * succeeds or is refused: checking the counts first and counting after the outcome would let any
 * number of concurrent attempts pass the check before the first of them is counted.
 */
export async function startAttempt(limits: AttemptLimit[]): Promise<Attempt> {
  const states = await Promise.all(limits.map(({ limiter, key }) => limiter.hit(key)));
  const takeBack = async () => {
    await Promise.all(limits.map(({ limiter, key }, i) => limiter.takeBack(key, states[i]!)));
  };
  const refusedBy = states.find((state) => !state.allowed);
  if (refusedBy) {
    await takeBack();
    return { allowed: false, refusedBy, states };
  }
  return { allowed: true, states, takeBack };
}

/** Housekeeping: deletes the counts of windows that are over for every limiter. */
export async function forgetOldRateLimitWindows(db: Db, now: Date): Promise<void> {
  await db
    .deleteFrom('rate_limit_windows')
    .where('window_start', '<', new Date(now.getTime() - KEEP_MS))
    .execute();
}
