import type { Job } from 'pg-boss';
import type { AppContext } from '../http/context.js';
import type { Jobs, JobQueue } from '../jobs/queue.js';
import { isMailKind, MAIL_KINDS, type MailKind } from './kinds.js';
import { SEND_MAIL, unsealMailData } from './outbox.js';
import { renderMail } from './render.js';
import { createMailSender, type MailSender } from './sender.js';

export type MailContext = AppContext & { queue: JobQueue };

/**
 * The mail part of the worker: sends each planned mail. A mail that fails (the SMTP server away or
 * refusing for now) fails its job, which pg-boss tries again later (`MAIL_QUEUES`).
 */
export class MailWorker {
  private readonly sender: MailSender;

  constructor(private readonly ctx: MailContext) {
    this.sender = createMailSender(ctx.config.mail, ctx.logger);
  }

  async start(): Promise<void> {
    await this.ctx.queue.work(SEND_MAIL, { pollingIntervalSeconds: 1, batchSize: 1 }, async (jobs) => {
      for (const job of jobs) await this.send(job);
    });
  }

  private async send(job: Job<Jobs[typeof SEND_MAIL]>): Promise<void> {
    const { kind, to, sealed } = job.data;
    if (!isMailKind(kind)) {
      this.ctx.logger.error({ kind }, 'mail of an unknown kind dropped');
      return;
    }
    const given = unsealMailData(this.ctx.keyring, sealed);
    const mailKind: MailKind = MAIL_KINDS[kind];
    const data = mailKind.prepare ? await mailKind.prepare(this.ctx, to, given) : given;
    if (!data) {
      // A reset asked for an address without an account, a verification the user no longer needs.
      this.ctx.logger.info({ kind }, 'mail not needed any more: nothing sent');
      return;
    }
    const { installationName } = this.ctx.config.mail;
    const mail = renderMail(kind, data, { installationName, publicUrl: this.ctx.config.publicUrl });
    await this.sender.send({ ...mail, to, kind });
    this.ctx.logger.info({ kind }, 'mail sent');
  }

  stop(): void {
    this.sender.close();
  }
}
