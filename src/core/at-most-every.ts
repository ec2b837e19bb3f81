/**
 * Paces housekeeping that runs along with requests (sweeps, clean-ups) to at most once per interval.
 * A clock that went back (a time step, a test's clock) makes the work due at once, instead of
 * holding it off until the clock catches up with the last run.
 */
export class AtMostEvery {
  private last: number | undefined;

  constructor(private readonly intervalMs: number) {}

  /** Whether the work is due at `now`; when it is, `now` counts as its last run. */
  due(now: Date | number): boolean {
    const at = typeof now === 'number' ? now : now.getTime();
    if (this.last !== undefined && at >= this.last && at - this.last < this.intervalMs) return false;
    this.last = at;
    return true;
  }
}
