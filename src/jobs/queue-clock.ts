import type { AttachableClock, Clock as BossClock, Db as BossDb } from 'pg-boss';
import { isMovable, systemClock, type Clock, type MovableClock } from '../core/clock.js';

/**
 * The clock pg-boss runs on, from the service's. pg-boss reads time in two places: its timers and
 * stamps in JavaScript (its `clock` option), and `job_now()` in the database, which decides when a
 * job falls due. On the system clock both are the machine's and the database's own time, as pg-boss
 * has them by default. A movable clock (the tests') is followed in both: pg-boss's JavaScript time and
 * `job_now()` run ahead of the real time by the clock's lead, so that a job planned before the clock
 * is moved forward falls due as much earlier. Both keep running while a test holds the service's own
 * reading still: pg-boss's polls, heartbeats and retries need time that passes.
 */
export function queueClockOf(clock: Clock): BossClock | undefined {
  return isMovable(clock) ? new LeadingClock(clock) : undefined;
}

const TIMERS = {
  setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (fn: () => void, ms: number) => setInterval(fn, ms),
  clearInterval: (handle: unknown) => clearInterval(handle as NodeJS.Timeout),
};

/**
 * pg-boss's `AttachableClock`. On start, pg-boss hands it the database; the first time the clock is
 * moved, it makes `job_now()` read the lead from a table of its own (for every session: the
 * application's transactions plan jobs through `job_now()` too), and it writes each new lead there
 * before the move it follows is over. Until then pg-boss's own `job_now()` stays, as fast as it is in
 * production (a benchmark's processes share the database of a test server that never moves its clock).
 */
class LeadingClock implements AttachableClock {
  readonly setTimeout = TIMERS.setTimeout;
  readonly clearTimeout = TIMERS.clearTimeout;
  readonly setInterval = TIMERS.setInterval;
  readonly clearInterval = TIMERS.clearInterval;

  constructor(private readonly clock: MovableClock) {}

  now(): number {
    return systemClock.now().getTime() + this.clock.leadMs;
  }

  async attach({ db, schema }: { db: BossDb; schema: string }): Promise<AsyncDisposable> {
    const table = `${schema}.clock_lead`;
    let following = false;
    const follow = async (leadMs: number) => {
      // Kept when the queue stops: another process on the same database may follow the same clock.
      if (!following)
        await db.executeSql(`
          create table if not exists ${table} (
            one boolean primary key default true check (one),
            lead_ms double precision not null
          );
          create or replace function ${schema}.job_now() returns timestamp with time zone as $$
            select pg_catalog.now() + coalesce((select lead_ms from ${table}), 0) * interval '1 millisecond'
          $$ language sql stable;`);
      following = true;
      await db.executeSql(
        `insert into ${table} (lead_ms) values ($1) on conflict (one) do update set lead_ms = excluded.lead_ms`,
        [leadMs],
      );
    };
    if (this.clock.leadMs !== 0) await follow(this.clock.leadMs);
    const stop = this.clock.onMove(follow);
    return {
      [Symbol.asyncDispose]: () => {
        stop();
        return Promise.resolve();
      },
    };
  }
}
