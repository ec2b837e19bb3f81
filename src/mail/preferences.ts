import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/database.js';
import type { InstanceSecrets } from '../db/instance-secrets.js';
import './tables.js';

/** The notifications a member may get by mail, and how the account page names them. */
export const NOTIFICATIONS = {
  'post-failed': 'A post failed, or its outcome is unknown',
  'channel-needs-reconnect': 'A channel needs to be connected again',
  'channel-expiring': 'A channel’s access ends soon',
  'post-awaits-approval': 'A post awaits your approval (editors, admins and owners)',
  'post-reviewed': 'Your post was approved or rejected',
} as const;
export type NotificationKind = keyof typeof NOTIFICATIONS;
export const NOTIFICATION_KINDS = Object.keys(NOTIFICATIONS) as NotificationKind[];

export function isNotificationKind(kind: string): kind is NotificationKind {
  return Object.hasOwn(NOTIFICATIONS, kind);
}

/** Turns a kind of notification on or off for a user. */
export async function setNotificationWanted(db: Db, userId: string, kind: NotificationKind, wanted: boolean) {
  await db
    .insertInto('mail_preferences')
    .values({ user_id: userId, kind, wanted })
    .onConflict((oc) => oc.columns(['user_id', 'kind']).doUpdateSet({ wanted }))
    .execute();
}

/** The kinds a user turned off. */
export async function unwantedNotifications(db: Db, userId: string): Promise<Set<string>> {
  const rows = await db
    .selectFrom('mail_preferences')
    .select('kind')
    .where('user_id', '=', userId)
    .where('wanted', '=', false)
    .execute();
  return new Set(rows.map((row) => row.kind));
}

/**
 * The token of a notification's unsubscribe link: the user, the kind and an HMAC of both under a key of
 * the installation, so that the link works without signing in and names nobody else.
 */
export async function unsubscribeToken(secrets: InstanceSecrets, userId: string, kind: NotificationKind) {
  return `${userId}.${kind}.${await signature(secrets, userId, kind)}`;
}

/** The user and kind an unsubscribe token names, if its signature holds. */
export async function readUnsubscribeToken(
  secrets: InstanceSecrets,
  token: string,
): Promise<{ userId: string; kind: NotificationKind } | undefined> {
  const [userId, kind, given] = token.split('.');
  if (!userId || !kind || !given || !isNotificationKind(kind)) return undefined;
  const expected = Buffer.from(await signature(secrets, userId, kind));
  const actual = Buffer.from(given);
  return expected.length === actual.length && timingSafeEqual(expected, actual) ? { userId, kind } : undefined;
}

async function signature(secrets: InstanceSecrets, userId: string, kind: string): Promise<string> {
  const key = await secrets.get('mail-unsubscribe');
  return createHmac('sha256', key).update(`unsubscribe:${userId}:${kind}`).digest('base64url');
}
