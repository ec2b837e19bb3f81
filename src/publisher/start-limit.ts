import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';

/**
 * How long a start counts: the network's minute, and a margin for the time between taking the start
 * and the network receiving the call (TikTok's creator info is read in between, and a busy worker
 * takes longer). Without it a start taken exactly a minute after the oldest could reach the network
 * while that one is still inside the network's own minute, and be refused for its rate.
 */
export const START_WINDOW_MS = 65_000;

/**
 * Takes one of a channel's starts of the last minute (and the margin above), for a network that allows at most `max`
 * publications to begin per account in any minute (TikTok: 6 video inits). Every worker counts in
 * the same rows, under the channel's row lock, so that together they never exceed the limit, even
 * across the turn of a minute. When none is left, the answer is when the oldest frees up.
 */
export async function takeStart(
  db: Db,
  channelId: string,
  max: number,
  now: Date,
): Promise<{ allowed: true } | { allowed: false; retryAt: Date }> {
  return transaction(db, async (trx) => {
    await sql`select id from channels where id = ${channelId} for update`.execute(trx);
    const since = new Date(now.getTime() - START_WINDOW_MS);
    await trx.deleteFrom('publication_starts').where('channel_id', '=', channelId).where('at', '<=', since).execute();
    const recent = await trx
      .selectFrom('publication_starts')
      .select('at')
      .where('channel_id', '=', channelId)
      .orderBy('at', 'desc')
      .limit(max)
      .execute();
    if (recent.length >= max)
      return { allowed: false, retryAt: new Date(recent[max - 1]!.at.getTime() + START_WINDOW_MS) };
    await trx.insertInto('publication_starts').values({ channel_id: channelId, at: now }).execute();
    return { allowed: true };
  });
}
