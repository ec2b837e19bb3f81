import type { Job, PgBoss } from 'pg-boss';
import type { Logger } from '../core/logger.js';
import { MicroBatcher } from './batcher.js';
import { processing } from './job-tracing.js';

// Handled jobs are completed together: at most this many, at most this long after the first.
const COMPLETE_BATCH = 100;
const COMPLETE_DELAY_MS = 20;

export interface ConsumerOptions<Data = unknown> {
  /** Jobs handled at once by this process. */
  capacity: number;
  /** How often to look for jobs that fell due while nothing else woke the consumer. */
  pollingIntervalSeconds: number;
  /** The queue's heartbeat: running jobs are touched twice per period, so pg-boss knows they live. */
  heartbeatSeconds: number;
  /** At most this many jobs of one group run at once, across every process (pg-boss `groupConcurrency`). */
  groupConcurrency?: { default: number; tiers?: Record<string, number> };
  /**
   * Runs on each batch fetched, before its jobs are handled one by one: work that costs less done for
   * the batch at once (reading the rows the jobs are about). A failure is logged; the jobs run anyway.
   */
  prepare?: (jobs: Job<Data>[]) => Promise<void>;
}

/**
 * Consumes one pg-boss queue job by job: one loop fetches as many jobs as there are free slots, each
 * job runs on its own and is completed (or failed, for pg-boss to retry) as soon as its handler
 * settles. pg-boss's own `work()` hands a batch to one handler and fetches again only when the whole
 * batch is done, so one slow job (a long video upload) would hold up the ones fetched with it; here
 * a freed slot is filled at once.
 */
export class JobConsumer<Data> {
  private readonly running = new Map<string, Promise<void>>();
  private stopping = false;
  private loop: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private sleeper: { wake: () => void; onSlot: boolean } | undefined;
  /**
   * Handled jobs, completed with the others handled in the next few milliseconds, in one statement. A
   * job whose completion a crash loses is handed out again once its heartbeat stops; its handler must
   * then find nothing left to do (the publisher's do: the post row says what is done).
   */
  private readonly completions: MicroBatcher<string>;

  constructor(
    private readonly boss: PgBoss,
    private readonly name: string,
    private readonly options: ConsumerOptions<Data>,
    private readonly handler: (job: Job<Data>) => Promise<void>,
    private readonly logger: Logger,
  ) {
    this.completions = new MicroBatcher((ids) => this.complete(ids), {
      size: COMPLETE_BATCH,
      delayMs: COMPLETE_DELAY_MS,
    });
  }

  start(): void {
    this.loop = this.fetchLoop();
    this.heartbeat = setInterval(() => this.touchRunning(), (this.options.heartbeatSeconds * 1000) / 2);
  }

  /** Jobs being handled now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Stops fetching, then waits up to `graceMs` for the running jobs to settle. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    this.sleeper?.wake();
    await this.loop;
    const settled = Promise.allSettled([...this.running.values()]);
    await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    clearInterval(this.heartbeat);
    await this.completions.flush();
  }

  private async fetchLoop(): Promise<void> {
    while (!this.stopping) {
      const free = this.options.capacity - this.running.size;
      let fetched = 0;
      if (free > 0) {
        try {
          const jobs = await this.boss.fetch<Data>(this.name, {
            batchSize: free,
            ...(this.options.groupConcurrency ? { groupConcurrency: this.options.groupConcurrency } : {}),
          });
          fetched = jobs.length;
          if (jobs.length > 0 && this.options.prepare) {
            await this.options
              .prepare(jobs)
              .catch((error: unknown) =>
                this.logger.error({ err: error, queue: this.name }, 'preparing fetched jobs failed'),
              );
          }
          for (const job of jobs) this.run(job);
        } catch (error) {
          this.logger.error({ err: error, queue: this.name }, 'fetching jobs failed');
        }
      }
      if (this.stopping) break;
      // A fetch that filled every free slot may have left more behind: look again as soon as a slot
      // is free. Otherwise everything due was taken: look again after the polling interval.
      const mayBeMore = fetched >= free;
      if (mayBeMore && this.running.size < this.options.capacity) continue;
      await this.pause(this.options.pollingIntervalSeconds * 1000, mayBeMore);
    }
  }

  /** Waits `ms`; less when the consumer stops, or, with `untilSlotFrees`, when a running job ends. */
  private pause(ms: number, untilSlotFrees: boolean): Promise<void> {
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.sleeper = undefined;
        resolve();
      };
      const timer = setTimeout(finish, ms);
      this.sleeper = { wake: finish, onSlot: untilSlotFrees };
    });
  }

  private run(job: Job<Data>): void {
    const handled = processing(this.name, job, () => this.handler(job)).then(
      () => void this.completions.add(job.id),
      (error: unknown) => {
        this.logger.error({ err: error, queue: this.name, jobId: job.id }, 'a job failed; pg-boss retries it');
        return this.boss.fail(this.name, job.id, { message: (error as Error).message });
      },
    );
    const settled = handled
      .then(() => undefined)
      .catch((error: unknown) =>
        this.logger.error({ err: error, queue: this.name, jobId: job.id }, 'could not settle a job'),
      )
      .finally(() => {
        this.running.delete(job.id);
        if (this.sleeper?.onSlot) this.sleeper.wake();
      });
    this.running.set(job.id, settled);
  }

  private async complete(ids: string[]): Promise<void> {
    await this.boss
      .complete(this.name, ids)
      .catch((error: unknown) =>
        this.logger.warn(
          { err: error, queue: this.name, jobs: ids.length },
          'could not complete handled jobs; they are handed out again',
        ),
      );
  }

  private touchRunning(): void {
    if (this.running.size === 0) return;
    this.boss
      .touch(this.name, [...this.running.keys()])
      .catch((error: unknown) =>
        this.logger.warn({ err: error, queue: this.name }, 'could not refresh the heartbeat of running jobs'),
      );
  }
}
