import { fromKysely, fromPglite, PgBoss, type Db as BossDb, type Job, type WorkOptions } from 'pg-boss';
import { sql, type RawBuilder } from 'kysely';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { QueueLoad } from '../core/metrics.js';
import type { DatabaseHandle, Db } from '../db/database.js';
import { JobConsumer, type ConsumerOptions } from './consumer.js';
import { processingBatch, sending } from './job-tracing.js';
import { queueClockOf } from './queue-clock.js';

/** The queues of this service, and what their jobs carry. */
export interface Jobs {
  /** Publish (or go on publishing, or find out what became of) one post; the post row says what to do. */
  'publish-post': { postId: string };
  /** Plan a job for every post that should have one and has none (see the publisher). */
  'reconcile-publications': Record<string, never>;
  /** Send (or send again) one webhook delivery; its row says where it stands. */
  'deliver-webhook': { deliveryId: string };
  /** Send one mail: its kind and recipient, and its template's data encrypted (see src/mail/outbox.ts). */
  'send-mail': { kind: string; to: string; sealed?: string };
  /** Plan the day's digest mail of every member who chose it and has notifications waiting (see src/mail/digest.ts). */
  'mail-digest': Record<string, never>;
  /** Create the occurrences of recurring series up to their horizon. */
  'plan-series': Record<string, never>;
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

/** A post to publish, as its job is planned. */
export interface PublishPlan {
  id: string;
  /** Its channel's publications are limited together: the channel is the job's group. */
  channel_id: string;
  /** The channel's network: the group's tier, whose limit the publisher sets per network. */
  provider: string;
  /** When it is due, on the service's clock; now when absent. */
  at?: Date | null;
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
  private readonly boss: PgBoss;

  private readonly db: Db;
  private readonly names: QueueName[] = [];
  private readonly clock: Clock;
  private readonly deleteAfterSeconds: number;

  constructor(
    database: DatabaseHandle,
    private readonly logger: Logger,
    clock: Clock,
    options: {
      runsSchedules: boolean;
      /** Days a finished job (completed, failed or cancelled) is kept before pg-boss deletes it. */
      keepFinishedJobsDays: number;
    },
  ) {
    this.db = database.db;
    this.clock = clock;
    this.deleteAfterSeconds = options.keepFinishedJobsDays * 86_400;
    const queueClock = queueClockOf(clock);
    const common = {
      schema: SCHEMA,
      // Jobs are planned for instants of the service's clock: when a test moves it, pg-boss follows.
      ...(queueClock ? { clock: queueClock } : {}),
      // Cron schedules (reconciliation, housekeeping) and queue maintenance belong to the workers.
      schedule: options.runsSchedules,
      supervise: options.runsSchedules,
      // How often the workers look for jobs whose worker died (their heartbeat stopped) and hand
      // them out again. pg-boss does it in its queue monitor's pass, which runs at most every
      // monitorIntervalSeconds (60 by default) even when supervising runs more often: both at 10, a
      // dead worker's jobs are handed out again within about 25 seconds of its last heartbeat (10 s
      // for the heartbeat to lapse, up to 10 s until the next pass, 5 s of retryDelay), not 75.
      superviseIntervalSeconds: 10,
      monitorIntervalSeconds: 10,
      // How often the workers delete the jobs kept long enough (each queue's deleteAfterSeconds, see
      // `start`): every hour rather than pg-boss's daily default, so that each pass deletes an hour of
      // jobs rather than a day's, and the table holds at most an hour more than the retention.
      maintenanceIntervalSeconds: 3600,
      // One row per process in pg-boss's instance registry is of no use here.
      registerInstance: false,
      // The spans of jobs are this queue's own (see `plan` and JobConsumer): pg-boss's would add one for
      // every fetch, the empty ones included, and read a trace context column on each.
      openTelemetry: { enabled: false },
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
    this.names.push(...queues.map(({ name }) => name));
    for (const queue of queues) {
      // The retention applies to every queue: pg-boss deletes a finished job that many seconds after it
      // finished.
      const options = { ...queue.options, deleteAfterSeconds: this.deleteAfterSeconds };
      await this.boss.createQueue(queue.name, options);
      // A queue keeps the options it was created with; a new version's options (or retention) apply
      // from its first start.
      await this.boss.updateQueue(queue.name, options);
    }
  }

  /** Plans a job in the caller's transaction: it exists if, and only if, the transaction commits. */
  async plan<Q extends QueueName>(trx: Db, name: Q, data: Jobs[Q], options: PlanOptions = {}): Promise<void> {
    await sending(name, 1, async (addTrace) => {
      await this.boss.send(name, addTrace(data), {
        ...(options.startAfter ? { startAfter: options.startAfter } : {}),
        ...(options.singletonKey ? { singletonKey: options.singletonKey } : {}),
        ...(options.group ? { group: options.group } : {}),
        db: fromKysely(trx),
      });
    });
  }

  /** Plans several jobs of one queue in the caller's transaction, in one statement. */
  async planMany<Q extends QueueName>(
    trx: Db,
    name: Q,
    jobs: { data: Jobs[Q]; startAfter?: Date; group?: PlanOptions['group'] }[],
  ): Promise<void> {
    if (jobs.length === 0) return;
    await sending(name, jobs.length, async (addTrace) => {
      await this.boss.insert(
        name,
        jobs.map((job) => ({
          data: addTrace(job.data),
          ...(job.startAfter ? { startAfter: job.startAfter } : {}),
          ...(job.group ? { group: job.group } : {}),
        })),
        { db: fromKysely(trx) },
      );
    });
  }

  /**
   * Plans publishing posts (or going on with them), one job each, in the caller's transaction and one
   * statement: the one way every change that makes a post due, and the publisher, plan a publication.
   * A channel's jobs form one group, so that its publications never run more at once than its network
   * allows, across all workers. A plan that a later change makes wrong (the post drafted, deleted or
   * rescheduled) is left to run: its job finds the post not due then, and does nothing.
   */
  async planPublish(trx: Db, posts: PublishPlan[]): Promise<void> {
    await this.planMany(
      trx,
      'publish-post',
      posts.map((post) => ({
        data: { postId: post.id },
        ...(post.at ? { startAfter: post.at } : {}),
        group: { id: post.channel_id, tier: post.provider },
      })),
    );
  }

  /** Plans a job of the queue `name` on a cron schedule (in UTC), in the processes that run schedules. */
  async schedule(name: QueueName, cron: string): Promise<void> {
    await this.boss.schedule(name, cron, {});
  }

  /**
   * The lost-job finder: the condition, for a query over rows that should each have a job of the queue
   * `name` (whose data names the row's `id` in `key`), that the row has none waiting, retrying or
   * running. Its job was lost (pg-boss gave up on it); the caller plans another. The publisher's
   * reconciliation and the webhook deliveries' sweep find their lost jobs with it.
   */
  noLiveJob<Q extends QueueName>(name: Q, key: keyof Jobs[Q] & string, id: RawBuilder<string>): RawBuilder<boolean> {
    return sql<boolean>`${id} not in (
      select job.data->>${key} from ${sql.table(`${SCHEMA}.job`)}
      where job.name = ${name} and job.state in ('created', 'retry', 'active') and job.data->>${key} is not null
    )`;
  }

  /**
   * Every queue's waiting jobs (created, or to be retried), and how long the one that fell due longest
   * ago has waited: a queue whose workers are gone or overwhelmed shows it here first.
   */
  async load(): Promise<QueueLoad[]> {
    const now = this.clock.now();
    const { rows } = await sql<{ name: string; waiting: number; oldest_due: Date | null }>`
      select name, count(*)::int as waiting, min(start_after) filter (where start_after <= ${now}) as oldest_due
      from ${sql.table(`${SCHEMA}.job`)} where state in ('created', 'retry') group by name`.execute(this.db);
    const byName = new Map(rows.map((row) => [row.name, row]));
    return this.names.map((queue) => {
      const row = byName.get(queue);
      const oldest = row?.oldest_due ? new Date(row.oldest_due).getTime() : now.getTime();
      return { queue, waiting: row?.waiting ?? 0, oldestDueSeconds: Math.max(0, (now.getTime() - oldest) / 1000) };
    });
  }

  /** Runs `handler` for the jobs of one queue, each batch in a span of its own. */
  async work<Q extends QueueName>(
    name: Q,
    options: WorkOptions,
    handler: (jobs: Job<Jobs[Q]>[]) => Promise<void>,
  ): Promise<string> {
    return this.boss.work<Jobs[Q]>(name, options, (jobs) => processingBatch(name, jobs.length, () => handler(jobs)));
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
