import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { eventually } from './eventually.js';

export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
  /** The links of the text part. */
  links: string[];
  /** Whether the mail came over TLS (STARTTLS, or TLS from the start). */
  secure: boolean;
}

export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>`, or `smtps://` for a server that speaks TLS from the start. */
  url: string;
  received: ReceivedMail[];
  /** Waits for the next mail to `to` not taken yet, and takes it. */
  next(to: string): Promise<ReceivedMail>;
  /** Refuses the next `count` recipients with a passing failure (451), as a busy server does. */
  refuseNext(count: number): void;
  close(): Promise<void>;
}

/**
 * A real SMTP server on loopback (Nodemailer's `smtp-server`), which parses each mail it takes with
 * `mailparser` and keeps it for the test to read. `options` are the server's (TLS, STARTTLS).
 */
export async function startSmtpSink(options: SMTPServerOptions = {}): Promise<SmtpSink> {
  const received: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  let refusals = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    ...options,
    onRcptTo(_address, _session, callback) {
      if (refusals > 0) {
        refusals -= 1;
        const error = Object.assign(new Error('Try again later'), { responseCode: 451 });
        return callback(error);
      }
      callback();
    },
    onData(stream, session, callback) {
      simpleParser(stream).then(
        (mail: ParsedMail) => {
          const text = mail.text ?? '';
          received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            subject: mail.subject ?? '',
            text,
            html: typeof mail.html === 'string' ? mail.html : '',
            links: text.match(/https?:\/\/\S+/g) ?? [],
            secure: session.secure,
          });
          callback();
        },
        (error: Error) => callback(error),
      );
    },
  });
  // A client that hangs up (one refusing the server's certificate) is the test's subject, not a failure.
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `${options.secure ? 'smtps' : 'smtp'}://127.0.0.1:${port}`,
    received,
    next: (to) =>
      eventually(() => {
        const mail = received.find((one) => !taken.has(one) && one.to.includes(to));
        if (!mail) throw new Error(`no mail to ${to} yet (${received.length} received)`);
        taken.add(mail);
        return mail;
      }),
    refuseNext: (count) => {
      refusals = count;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
