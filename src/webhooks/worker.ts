import type { JobConsumer } from '../jobs/consumer.js';
import type { Jobs } from '../jobs/queue.js';
import { DELIVER, type WebhookContext } from './deliveries.js';
import type { WebhookDeliverer } from './deliverer.js';
import { WebhookDispatcher } from './dispatcher.js';

/** How the worker sends deliveries (`config.webhooks`). */
export interface WebhookWorkerSettings {
  /** Deliveries this worker sends at once (they wait on the receivers, not on the CPU). */
  concurrency: number;
  /** How often the worker looks for deliveries that fell due. */
  pollingIntervalSeconds: number;
}

// pg-boss's shortest heartbeat: a job whose worker died is given back after it.
const HEARTBEAT_SECONDS = 10;

/**
 * The webhooks' queue, as pg-boss keeps it. A delivery's row says where it stands, and its job is
 * planned again on the row's schedule. pg-boss retries only a job whose worker died (no heartbeat for
 * 10 s) or failed unexpectedly: sending again is safe, a receiver drops a repeated webhook-id.
 */
export const WEBHOOK_QUEUES = [
  {
    name: DELIVER,
    options: { retryLimit: 10, retryDelay: 2, heartbeatSeconds: HEARTBEAT_SECONDS, expireInSeconds: 120 },
  },
] as const;

/**
 * The webhooks' part of the worker, started and stopped with it: the dispatcher that turns post and
 * channel events into deliveries, and the consumer that sends each delivery as it falls due.
 */
export class WebhookWorker {
  private readonly dispatcher: WebhookDispatcher;
  private consumer: JobConsumer<Jobs[typeof DELIVER]> | undefined;

  constructor(
    private readonly ctx: WebhookContext,
    private readonly deliverer: WebhookDeliverer,
    private readonly settings: WebhookWorkerSettings,
  ) {
    this.dispatcher = new WebhookDispatcher(ctx);
  }

  start(): void {
    this.dispatcher.start();
    this.consumer = this.ctx.queue.consume(
      DELIVER,
      {
        capacity: this.settings.concurrency,
        pollingIntervalSeconds: this.settings.pollingIntervalSeconds,
        heartbeatSeconds: HEARTBEAT_SECONDS,
        prepare: (jobs) => this.deliverer.prepare(jobs.map((job) => job.data.deliveryId)),
      },
      (job) => this.deliverer.deliver(job.data.deliveryId),
    );
  }

  /** Stops dispatching and taking deliveries; the ones being sent get up to `graceMs` to finish. */
  async stop(graceMs: number): Promise<void> {
    await this.dispatcher.stop();
    await this.consumer?.stop(graceMs);
  }
}
