import type { Db } from '../db/database.js';
import type { Keyring } from '../crypto/keyring.js';
import type { JobQueue } from '../jobs/queue.js';
import type { MailData, MailKindName } from './kinds.js';

/** The queue that sends mail; its jobs are retried with a growing wait (a mail server away for a while). */
export const SEND_MAIL = 'send-mail';

/** About a day of tries: waits from 30 s doubling up to an hour. */
export const MAIL_QUEUES = [
  {
    name: SEND_MAIL,
    options: { retryLimit: 12, retryDelay: 30, retryBackoff: true, retryDelayMax: 3600, expireInSeconds: 120 },
  },
  // Once a day; a run that failed is tried again within the hour (each member's digest is planned once a day).
  { name: 'mail-digest', options: { retryLimit: 6, retryDelay: 600 } },
] as const;

/** A mail to send: its kind, its one recipient and what its template reads. */
export interface Mail {
  kind: MailKindName;
  to: string;
  data?: MailData;
}

export interface MailOutbox {
  queue: JobQueue;
  keyring: Keyring;
}

// The data may hold a link that works as a secret (an invitation's): it waits in the queue encrypted.
const SEALED = 'mail-data';

/**
 * Plans a mail inside the caller's transaction: it is sent, by a worker, if and only if the transaction
 * commits; never inside the request. The one way any feature sends mail.
 */
export async function planMail(ctx: MailOutbox, trx: Db, mail: Mail): Promise<void> {
  await ctx.queue.plan(trx, SEND_MAIL, {
    kind: mail.kind,
    to: mail.to,
    ...(mail.data ? { sealed: ctx.keyring.encrypt(JSON.stringify(mail.data), SEALED) } : {}),
  });
}

/** The data of a planned mail, as `planMail` sealed it. */
export function unsealMailData(keyring: Keyring, sealed: string | undefined): MailData {
  return sealed ? (JSON.parse(keyring.decrypt(sealed, SEALED)) as MailData) : {};
}
