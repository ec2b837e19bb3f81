import { createApiKey } from '../../src/accounts/api-keys.js';
import { createOrganizationWithOwner } from '../../src/accounts/organizations.js';
import { addChannel } from '../../src/channels/channels.js';
import type { PostStatus, Provider } from '../../src/core/contract.js';
import { newId, randomBase62 } from '../../src/core/ids.js';
import type { Keyring } from '../../src/crypto/keyring.js';
import type { Db } from '../../src/db/database.js';
import { credentialsContext } from '../../src/providers/account-credentials.js';

export interface TestOrganization {
  id: string;
  name: string;
  userId: string;
  email: string;
  password: string;
  /** A live API key of the organization. */
  apiKey: string;
  auth: { Authorization: string };
}

export async function createOrganization(db: Db, name = 'Acme Studio'): Promise<TestOrganization> {
  const email = `owner-${randomBase62(8).toLowerCase()}@example.com`;
  const password = 'correct horse battery staple';
  const { organization, user } = await createOrganizationWithOwner(db, { organizationName: name, email, password });
  const { secret } = await createApiKey(db, organization.id, 'test key');
  return {
    id: organization.id,
    name: organization.name,
    userId: user.id,
    email,
    password,
    apiKey: secret,
    auth: { Authorization: `Bearer ${secret}` },
  };
}

export function createChannel(db: Db, organizationId: string, provider: Provider, name = `${provider} channel`) {
  return addChannel(db, { organization_id: organizationId, provider, name, username: null, picture: null });
}

/**
 * A Mastodon channel connected to the instance at `site` (its origin), holding credentials as connecting
 * stores them, so that the instance's own limits apply to its posts; its tokens are the test's own.
 */
export async function createMastodonChannel(
  db: Db,
  keyring: Keyring,
  organizationId: string,
  site: string,
  name = 'Mastodon channel',
) {
  const externalId = `${randomBase62(8)}@${new URL(site).host}`;
  const credentials = {
    accessToken: randomBase62(24),
    refreshToken: null,
    expiresAt: null,
    scopes: ['read:accounts', 'write:statuses', 'write:media'],
    site,
    clientId: randomBase62(16),
  };
  return addChannel(db, {
    organization_id: organizationId,
    provider: 'mastodon',
    name,
    username: name,
    picture: null,
    external_id: externalId,
    credentials: keyring.encrypt(
      JSON.stringify(credentials),
      credentialsContext(organizationId, 'mastodon', externalId),
    ),
  });
}

/**
 * A media row of the organization, as the media endpoints would leave it: a JPEG or an MP4 of 1 KiB
 * unless `file` says another type or size (the rules of posts read these, never the bytes).
 */
export async function insertMedia(
  db: Db,
  organizationId: string,
  kind: 'image' | 'video' | 'document',
  durationMs: number | null = null,
  file: { contentType?: string; size?: number; width?: number; height?: number; pageCount?: number } = {},
): Promise<string> {
  const id = newId('med');
  const contentType =
    file.contentType ?? { video: 'video/mp4', image: 'image/jpeg', document: 'application/pdf' }[kind];
  await db
    .insertInto('media')
    .values({
      id,
      organization_id: organizationId,
      file_name: { video: 'clip.mp4', image: 'photo.jpg', document: 'deck.pdf' }[kind],
      content_type: contentType,
      kind,
      size: file.size ?? 1024,
      storage_key: `test/${id}`,
      duration_ms: durationMs,
      width: file.width ?? null,
      height: file.height ?? null,
      page_count: kind === 'document' ? (file.pageCount ?? 1) : null,
    })
    .execute();
  return id;
}

/** A post in any state, e.g. one the publisher has taken (`publishing`) or finished. */
export async function insertPost(
  db: Db,
  post: {
    organizationId: string;
    channelId: string;
    status: PostStatus;
    scheduledAt: string | null;
    mediaIds?: string[];
    error?: { code: string; message: string } | null;
    content?: string;
  },
): Promise<string> {
  const id = newId('post');
  await db
    .insertInto('posts')
    .values({
      id,
      organization_id: post.organizationId,
      group_id: newId('grp'),
      channel_id: post.channelId,
      content: post.content ?? 'inserted by the test',
      media_ids: JSON.stringify(post.mediaIds ?? []),
      settings: JSON.stringify({ __type: 'sandbox', outcome: 'published', failingPart: 1 }),
      status: post.status,
      scheduled_at: post.scheduledAt,
      error_code: post.error?.code ?? null,
      error_message: post.error?.message ?? null,
      updated_at: new Date(),
    })
    .execute();
  return id;
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
