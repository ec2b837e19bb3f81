import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** The jobs of one queue that wait: how many, and how long the one due longest has waited. */
export interface QueueLoad {
  queue: string;
  waiting: number;
  oldestDueSeconds: number;
}

/** A connection pool's use, as pg.Pool counts it. */
export interface PoolUse {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** How a run of a publication ended, as counted: `retried` is a passing failure, tried again later. */
export type PublicationOutcome = 'published' | 'retried' | 'failed' | 'outcome_unknown' | 'needs_reconnect';

// A scrape reads every queue gauge: one query answers them all.
const QUEUE_READ_REUSE_MS = 1000;

/**
 * The service's Prometheus series, in a registry of its own (tests run several services in one
 * process). Counters are counted where things happen; the queues' and the pool's gauges are read when
 * scraped, from the sources given to `watch`; PostgreSQL's pool has series, PGlite none.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'operation' | 'method' | 'status'>;
  readonly httpDuration: Histogram<'operation' | 'method' | 'status'>;
  readonly publications: Counter<'network' | 'outcome'>;
  readonly publishLateness: Histogram<'network'>;
  readonly webhookDeliveries: Counter<'outcome'>;
  readonly tokenRefreshFailures: Counter<'network'>;
  private queues: (() => Promise<QueueLoad[]>) | undefined;
  private queueRead: { at: number; load: Promise<QueueLoad[]> } | undefined;

  constructor() {
    const registers = [this.registry];
    this.httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered, by operationId (Public and OAuth APIs) or route, method and status.',
      labelNames: ['operation', 'method', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by operationId or route, method and status.',
      labelNames: ['operation', 'method', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.publications = new Counter({
      name: 'publications_total',
      help:
        'Runs of publications that ended, by network and outcome ' +
        '(published, retried, failed, outcome_unknown, needs_reconnect).',
      labelNames: ['network', 'outcome'],
      registers,
    });
    this.publishLateness = new Histogram({
      name: 'publish_lateness_seconds',
      help: 'Time from the scheduled instant of a post to its publication, by network.',
      labelNames: ['network'],
      buckets: [1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600],
      registers,
    });
    this.webhookDeliveries = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook deliveries that ended, by outcome (succeeded, failed).',
      labelNames: ['outcome'],
      registers,
    });
    this.tokenRefreshFailures = new Counter({
      name: 'token_refresh_failures_total',
      help: "Refreshes of a connected account's tokens that failed, by network.",
      labelNames: ['network'],
      registers,
    });
    const queueLoad = () => this.queueLoad();
    new Gauge({
      name: 'job_queue_waiting',
      help: 'Jobs waiting in a queue (created or to be retried), by queue.',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        for (const load of await queueLoad()) this.set({ queue: load.queue }, load.waiting);
      },
    });
    new Gauge({
      name: 'job_queue_oldest_due_seconds',
      help: 'How long the job of a queue that fell due longest ago has waited, by queue (0 when none waits).',
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        for (const load of await queueLoad()) this.set({ queue: load.queue }, load.oldestDueSeconds);
      },
    });
  }

  /** Where the gauges read on a scrape: the job queue's load, and PostgreSQL's pool (none on PGlite). */
  watch(sources: { queues?: () => Promise<QueueLoad[]>; pool?: PoolUse }): void {
    if (sources.queues) this.queues = sources.queues;
    if (sources.pool) this.watchPool(sources.pool);
  }

  private watchPool(pool: PoolUse): void {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    gauge('db_pool_connections', "PostgreSQL connections in the service's pool.", () => pool.totalCount);
    gauge('db_pool_idle_connections', 'Pool connections open and idle.', () => pool.idleCount);
    gauge('db_pool_waiting_requests', 'Queries waiting for a pool connection.', () => pool.waitingCount);
  }

  /** The exposition text, and its content type. */
  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }

  private queueLoad(): Promise<QueueLoad[]> {
    if (!this.queues) return Promise.resolve([]);
    const now = performance.now(); // a duration since the last read, not a reading of the clock
    if (!this.queueRead || now - this.queueRead.at > QUEUE_READ_REUSE_MS)
      this.queueRead = { at: now, load: this.queues() };
    return this.queueRead.load;
  }
}
