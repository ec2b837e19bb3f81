import type { EnvReader } from './env-reader.js';

/** Recurring posts (series). */
export interface RecurringConfig {
  /** How far ahead a series' occurrences are created as posts. */
  horizonDays: number;
  /**
   * How late an occurrence may still be published: one whose time passed longer ago (the server
   * was down) is skipped rather than published late, so that a restart never publishes a burst.
   */
  graceMs: number;
}

export function readRecurring(read: EnvReader): RecurringConfig {
  return {
    horizonDays: read.integer('RECURRING_HORIZON_DAYS', 14, 1, 366),
    graceMs: read.integer('RECURRING_GRACE_MINUTES', 30, 1, 1440) * 60_000,
  };
}
