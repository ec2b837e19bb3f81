import { fromKysely, fromPglite, PgBoss, type Db as BossDb, type Job, type WorkOptions } from 'pg-boss';
import { CompiledQuery } from 'kysely';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { DatabaseHandle, Db } from '../db/database.js';
import { JobConsumer, type ConsumerOptions } from './consumer.js';
import { queueClockOf } from './queue-clock.js';

/** The queues of this service, and what their jobs carry. */
export interface Jobs {
  /** Publish (or go on publishing, or find out what became of) one post; the post row says what to do. */
  'publish-post': { postId: string };
  /** Plan a job for every post that should have one and has none (see the publisher). */
  'reconcile-publications': Record<string, never>;
  /** Send (or send again) one webhook delivery; its row says where it stands. */
  'deliver-webhook': { deliveryId: string };
  /** Housekeeping that used to run inside requests. */
  housekeeping: Record<string, never>;
}
export type QueueName = keyof Jobs;

export interface PlanOptions {
  /** When the job may run, on the service's clock; now when absent. */
  startAfter?: Date;
  /** A job with this key exists once while it is queued or running (pg-boss `singletonKey`). */
  singletonKey?: string;
  /** Jobs of one group run at most `groupConcurrency` at a time (a channel's posts). */
  group?: { id: string; tier?: string };
}

const SCHEMA = 'pgboss';

/**
 * pg-boss on the embedded database. PGlite is one connection, and Kysely's driver hands it out one
 * user at a time; pg-boss's statements must wait their turn too, or one of them would land inside a
 * transaction of the application's (or commit it halfway).
 */
function pgliteForBoss(database: DatabaseHandle): BossDb {
  const inner = fromPglite(database.pglite!);
  const serialized = <T>(run: () => Promise<T>) => database.db.connection().execute(run);
  return {
    executeSql: (text, values) => serialized(() => inner.executeSql(text, values)),
    ...(inner.setSessionStatements
      ? { setSessionStatements: (statements: string[]) => serialized(() => inner.setSessionStatements!(statements)) }
      : {}),
  };
}

/**
 * The job queue: pg-boss in the service's own database (PGlite or PostgreSQL), so a job can be
 * planned in the same transaction as the change that calls for it, and commits or rolls back with it.
 */
export class JobQueue {
  readonly boss: PgBoss;

  constructor(
    database: DatabaseHandle,
    private readonly logger: Logger,
    clock: Clock,
    options: { runsSchedules: boolean },
  ) {
    const queueClock = queueClockOf(clock);
    const common = {
      schema: SCHEMA,
      // Jobs are planned for instants of the service's clock: when a test moves it, pg-boss follows.
      ...(queueClock ? { clock: queueClock } : {}),
      // Cron schedules (reconciliation, housekeeping) and queue maintenance belong to the workers.
      schedule: options.runsSchedules,
      supervise: options.runsSchedules,
      // How often the workers look for jobs whose worker died (their heartbeat stopped) and hand
      // them out again: a crashed worker's publications are taken over within about 20 seconds.
      superviseIntervalSeconds: 10,
      // One row per process in pg-boss's instance registry is of no use here.
      registerInstance: false,
    };
    this.boss =
      database.kind === 'pglite'
        ? new PgBoss({ ...common, db: pgliteForBoss(database), backend: 'pglite' })
        : new PgBoss({
            ...common,
            connectionString: database.connectionString,
            max: 4,
            application_name: 'post-scheduler-jobs',
          });
    this.boss.on('error', (error) => this.logger.error({ err: error }, 'job queue error'));
  }

  async start(queues: { name: QueueName; options?: Parameters<PgBoss['createQueue']>[1] }[]): Promise<void> {
    await this.boss.start();
    for (const { name, options } of queues) {
      await this.boss.createQueue(name, options);
      // A queue keeps the options it was created with; a new version's options apply from its first start.
      if (options && Object.keys(options).length > 0) await this.boss.updateQueue(name, options);
    }
  }

  /** Plans a job in the caller's transaction: it exists if, and only if, the transaction commits. */
  async plan<Q extends QueueName>(trx: Db, name: Q, data: Jobs[Q], options: PlanOptions = {}): Promise<void> {
    await this.boss.send(name, data, {
      ...(options.startAfter ? { startAfter: options.startAfter } : {}),
      ...(options.singletonKey ? { singletonKey: options.singletonKey } : {}),
      ...(options.group ? { group: options.group } : {}),
      db: fromKysely(trx),
    });
  }

  /**
   * Plans several jobs of one queue in the caller's transaction, in one statement. `sent` is called once
   * that statement is on its way, for a pipelined transaction that sends its COMMIT right behind it.
   */
  async planMany<Q extends QueueName>(
    trx: Db,
    name: Q,
    jobs: { data: Jobs[Q]; startAfter?: Date; group?: PlanOptions['group'] }[],
    sent: () => void = () => {},
  ): Promise<void> {
    if (jobs.length === 0) return sent();
    const db: BossDb = {
      executeSql: async (text, values) => {
        const running = trx.executeQuery(CompiledQuery.raw(text, values ?? []));
        sent();
        return { rows: [...(await running).rows] };
      },
    };
    await this.boss.insert(
      name,
      jobs.map((job) => ({
        data: job.data,
        ...(job.startAfter ? { startAfter: job.startAfter } : {}),
        ...(job.group ? { group: job.group } : {}),
      })),
      { db },
    );
  }

  /** Runs `handler` for the jobs of one queue. */
  async work<Q extends QueueName>(
    name: Q,
    options: WorkOptions,
    handler: (jobs: Job<Jobs[Q]>[]) => Promise<void>,
  ): Promise<string> {
    return this.boss.work<Jobs[Q]>(name, options, handler);
  }

  /** Handles the jobs of one queue one by one as they fall due, up to `options.capacity` at once (see JobConsumer). */
  consume<Q extends QueueName>(
    name: Q,
    options: ConsumerOptions<Jobs[Q]>,
    handler: (job: Job<Jobs[Q]>) => Promise<void>,
  ): JobConsumer<Jobs[Q]> {
    const consumer = new JobConsumer<Jobs[Q]>(this.boss, name, options, handler, this.logger);
    consumer.start();
    return consumer;
  }

  /** Stops taking jobs; running handlers get up to `graceMs` to finish, the rest go back to the queue. */
  async stop(graceMs: number): Promise<void> {
    await this.boss.stop({ graceful: true, timeout: graceMs, close: true });
  }
}
