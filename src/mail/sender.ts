import { createTransport, type Transporter } from 'nodemailer';
import type { Logger } from '../core/logger.js';
import type { MailConfig } from '../core/config.js';
import type { RenderedMail } from './render.js';

/** Where rendered mail goes: an SMTP server, or, without one, the log. */
export interface MailSender {
  send(mail: RenderedMail & { to: string; kind: string }): Promise<void>;
  close(): void;
}

/**
 * Mail through the SMTP server of SMTP_URL: `smtps://` speaks TLS from the start, `smtp://` upgrades
 * with STARTTLS when the server offers it (and must with `?requireTLS=true`), as Nodemailer reads the URL.
 */
class SmtpSender implements MailSender {
  private readonly transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
  ) {
    this.transport = createTransport(smtpUrl);
  }

  async send(mail: RenderedMail & { to: string }): Promise<void> {
    await this.transport.sendMail({
      from: this.from,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
    });
  }

  close(): void {
    this.transport.close();
  }
}

/**
 * Without SMTP: each mail is logged by recipient, kind and subject, never with its body, whose links
 * would sign anybody who reads the log in as its recipient. The admin CLI does what the links would.
 */
class LogSender implements MailSender {
  constructor(private readonly logger: Logger) {}

  send(mail: { to: string; kind: string; subject: string }): Promise<void> {
    this.logger.info(
      { to: mail.to, kind: mail.kind, subject: mail.subject },
      'mail not sent: no SMTP_URL is configured (see docs/operations.md, Mail)',
    );
    return Promise.resolve();
  }

  close(): void {}
}

export function createMailSender(config: MailConfig, logger: Logger): MailSender {
  return config.smtpUrl ? new SmtpSender(config.smtpUrl, config.from) : new LogSender(logger);
}
