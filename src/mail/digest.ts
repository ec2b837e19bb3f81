import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import { planMail, type MailOutbox } from './outbox.js';
import type { NotificationKind } from './preferences.js';

/**
 * The daily digest: a member who chose it gets the day's notifications in one mail instead of one mail
 * each. A notification for them waits as an item (`notification_digest_items`); once a day the worker's
 * `mail-digest` job plans, per member with waiting items, one mail with them all and deletes them, in one
 * transaction with a row for the member and the day (`notification_digests`), so that a job run twice, or
 * by two workers at once, sends one digest a day.
 */

/** The preference (a `mail_preferences` kind) of a member who wants the daily digest. */
export const DIGEST_PREFERENCE = 'daily-digest';

/** When the digest goes out: every day at 07:00 UTC. */
export const DIGEST_CRON = '0 7 * * *';

/** Whether the user chose the daily digest. */
export async function wantsDigest(db: Db, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('mail_preferences')
    .select('wanted')
    .where('user_id', '=', userId)
    .where('kind', '=', DIGEST_PREFERENCE)
    .executeTakeFirst();
  return row?.wanted ?? false;
}

/** A user chooses the daily digest (`true`) or a mail for each notification. */
export async function setDigestWanted(db: Db, userId: string, wanted: boolean): Promise<void> {
  await db
    .insertInto('mail_preferences')
    .values({ user_id: userId, kind: DIGEST_PREFERENCE, wanted })
    .onConflict((oc) => oc.columns(['user_id', 'kind']).doUpdateSet({ wanted }))
    .execute();
}

/** Of these users, those who chose the daily digest. */
export async function digestReaders(trx: Db, userIds: string[]): Promise<Set<string>> {
  if (userIds.length === 0) return new Set();
  const rows = await trx
    .selectFrom('mail_preferences')
    .select('user_id')
    .where('user_id', 'in', userIds)
    .where('kind', '=', DIGEST_PREFERENCE)
    .where('wanted', '=', true)
    .execute();
  return new Set(rows.map((row) => row.user_id));
}

/** An item of a member's next digest: a notification as its own mail would have said it. */
export interface DigestItem {
  organizationId: string;
  kind: NotificationKind;
  headline: string;
  details: string;
  path: string;
}

export async function addDigestItems(trx: Db, userId: string, items: DigestItem[]): Promise<void> {
  if (items.length === 0) return;
  await trx
    .insertInto('notification_digest_items')
    .values(
      items.map((item) => ({
        user_id: userId,
        organization_id: item.organizationId,
        kind: item.kind,
        headline: item.headline,
        details: item.details,
        path: item.path,
      })),
    )
    .execute();
}

/**
 * Plans today's digest of every member with waiting items (the `mail-digest` job, daily at 07:00 UTC):
 * once per member and day, whatever runs it again. Items of a member who has had today's digest wait
 * for tomorrow's. Answers how many digests it planned.
 */
export async function sendDigests(ctx: MailOutbox & { db: Db }, now: Date): Promise<number> {
  const day = now.toISOString().slice(0, 10);
  const readers = await ctx.db.selectFrom('notification_digest_items').select('user_id').distinct().execute();
  let planned = 0;
  for (const { user_id: userId } of readers) {
    const sent = await transaction(ctx.db, async (trx) => {
      const first = await trx
        .insertInto('notification_digests')
        .values({ user_id: userId, day })
        .onConflict((oc) => oc.columns(['user_id', 'day']).doNothing())
        .returning('user_id')
        .executeTakeFirst();
      if (!first) return false;
      const items = await trx
        .deleteFrom('notification_digest_items')
        .where('user_id', '=', userId)
        .returning(['kind', 'headline', 'details', 'path', 'created_at'])
        .execute();
      const user = await trx
        .selectFrom('users')
        .select(['email', 'email_verified_at'])
        .where('id', '=', userId)
        .executeTakeFirst();
      if (!user?.email_verified_at || items.length === 0) return false;
      items.sort((a, b) => new Date(a.created_at).getTime() - new Date(b.created_at).getTime());
      await planMail(ctx, trx, {
        kind: 'notification-digest',
        to: user.email,
        data: {
          userId,
          day,
          items: JSON.stringify(items.map(({ kind, headline, details, path }) => ({ kind, headline, details, path }))),
        },
      });
      return true;
    });
    if (sent) planned += 1;
  }
  return planned;
}

/** Housekeeping: the record of the digests sent, once their day is long gone. */
export async function forgetOldDigests(db: Db, now: Date): Promise<void> {
  await db
    .deleteFrom('notification_digests')
    .where('day', '<', sql<string>`(${now}::timestamptz - interval '7 days')::date`)
    .execute();
}
