import type { Db } from '../../src/db/database.js';
import type { Channel, PostStatus } from '../../src/db/schema.js';
import { ProviderError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import type { TikTokCreatorInfo, TikTokCreatorInfoSource } from '../../src/providers/tiktok.js';

/** A media row of the organization, as the media endpoints would leave it. */
export async function insertMedia(db: Db, organizationId: string, kind: 'image' | 'video'): Promise<string> {
  const id = newId('med');
  await db
    .insertInto('media')
    .values({
      id,
      organization_id: organizationId,
      file_name: kind === 'video' ? 'clip.mp4' : 'photo.jpg',
      content_type: kind === 'video' ? 'video/mp4' : 'image/jpeg',
      kind,
      size: 1024,
      storage_key: `test/${id}`,
    })
    .execute();
  return id;
}

/** A post in any state, e.g. one the publisher has taken (`publishing`) or finished. */
export async function insertPost(
  db: Db,
  post: { organizationId: string; channelId: string; status: PostStatus; scheduledAt: string | null; error?: string | null },
): Promise<string> {
  const id = newId('post');
  await db
    .insertInto('posts')
    .values({
      id,
      organization_id: post.organizationId,
      group_id: newId('grp'),
      channel_id: post.channelId,
      content: 'inserted by the test',
      media_ids: '[]',
      settings: JSON.stringify({ __type: 'sandbox', outcome: 'published' }),
      status: post.status,
      scheduled_at: post.scheduledAt,
      error: post.error ?? null,
      updated_at: new Date(),
    })
    .execute();
  return id;
}

export const OPEN_CREATOR: TikTokCreatorInfo = {
  canPost: true,
  cannotPostReason: null,
  creatorNickname: 'Acme Studio',
  creatorUsername: 'acmestudio',
  creatorAvatarUrl: null,
  privacyLevelOptions: ['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'SELF_ONLY'],
  commentDisabled: false,
  duetDisabled: false,
  stitchDisabled: false,
  maxVideoPostDurationSec: 600,
};

/**
 * Stands in for TikTok behind the adapter interface: answers the creator info set per channel
 * (`OPEN_CREATOR` by default), or fails like an unreachable TikTok.
 */
export class FakeTikTok implements TikTokCreatorInfoSource {
  private readonly infos = new Map<string, TikTokCreatorInfo>();
  private readonly unreachable = new Set<string>();
  readonly reads: string[] = [];

  set(channelId: string, info: Partial<TikTokCreatorInfo>): void {
    this.infos.set(channelId, { ...OPEN_CREATOR, ...info });
  }

  failFor(channelId: string): void {
    this.unreachable.add(channelId);
  }

  async creatorInfo(channel: Channel): Promise<TikTokCreatorInfo> {
    this.reads.push(channel.id);
    if (this.unreachable.has(channel.id)) {
      throw new ProviderError('TikTok did not answer the creator info request in time; try again in a moment.');
    }
    return this.infos.get(channel.id) ?? OPEN_CREATOR;
  }
}

/** Every test file runs many requests under a frozen clock, all in one rate-limit window. */
export const POSTS_TEST_ENV = { RATE_LIMIT_MAX: '1000000' };

type Sender = { fetch(path: string, init?: RequestInit): Promise<Response> };

/** Sends a JSON request as the organization. */
export function send(
  server: Sender,
  auth: { Authorization: string },
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return server.fetch(path, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** How many posts the organization has, read from the database. */
export async function countPosts(db: Db, organizationId: string): Promise<number> {
  const row = await db
    .selectFrom('posts')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}
