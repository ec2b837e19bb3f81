import type { MovableClock } from '../../src/core/clock.js';

/**
 * The clock a test server runs on, which the test moves instead of waiting. It runs with the
 * machine's time until it is moved:
 *
 * - `stopAt(instant)` holds the service's reading still at `instant` (every rule reads the same time,
 *   so answers are exact); `stopAt(undefined)` lets it run again;
 * - `advance(ms)` moves it forward, still or running. The job queue's time moves with it (see
 *   `src/jobs/queue-clock.ts`): a job planned for a time the move passed falls due at once, as if the
 *   test had waited.
 *
 * The queue's time runs on while the clock is held still (pg-boss's polls, heartbeats and retries
 * need time that passes): it is the machine's time plus every `advance` so far.
 */
export class TestClock implements MovableClock {
  private lead = 0;
  private stoppedAt: number | undefined;
  private readonly listeners = new Set<(leadMs: number) => Promise<void>>();

  now(): Date {
    return new Date(this.stoppedAt ?? Date.now() + this.lead);
  }

  get leadMs(): number {
    return this.lead;
  }

  onMove(listener: (leadMs: number) => Promise<void>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Holds the clock still at `instant`; `undefined` lets it run again (from the machine's time and the moves). */
  stopAt(instant: Date | string | undefined): void {
    this.stoppedAt = instant === undefined ? undefined : new Date(instant).getTime();
  }

  /** Moves the clock, and the job queue's time, forward by `ms`; resolves once the queue follows. */
  async advance(ms: number): Promise<void> {
    if (ms < 0) throw new Error('a test clock moves forward only: jobs planned on it could not follow it back');
    this.lead += ms;
    if (this.stoppedAt !== undefined) this.stoppedAt += ms;
    await Promise.all([...this.listeners].map((listener) => listener(this.lead)));
  }
}
