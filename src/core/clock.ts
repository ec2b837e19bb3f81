/**
 * Where the service reads the time. Every rule that depends on time (a date in the past, an expiry,
 * a lease, a retry's delay, a rate window) asks the one clock that `src/compose.ts` builds and passes
 * to every feature, and SQL gets its reading as a parameter, so that a test that moves the clock moves
 * all of them. Durations the service measures (a request's latency, a grace period) are no readings of
 * this clock: they use the monotonic `performance.now()`, which a test clock does not move and the
 * system clock's corrections do not bend.
 */
export interface Clock {
  /** The current instant. */
  now(): Date;
}

/** The machine's clock: the one the service runs on outside tests. */
export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock that can be moved forward (the tests'). What keeps time of its own beside the service's
 * rules follows it: the job queue, whose jobs fall due by the database's time, runs `leadMs` ahead of
 * the machine's time, and hears of every move through `onMove` before the move is over.
 */
export interface MovableClock extends Clock {
  /** How far the clock has been moved ahead of the machine's time, in milliseconds. */
  readonly leadMs: number;
  /** Calls `listener` with the new lead each time the clock is moved; the returned function stops that. */
  onMove(listener: (leadMs: number) => Promise<void>): () => void;
}

export function isMovable(clock: Clock): clock is MovableClock {
  return 'onMove' in clock && typeof clock.onMove === 'function';
}
