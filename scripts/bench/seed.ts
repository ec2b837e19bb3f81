import { sql } from 'kysely';
import { createApiKey } from '../../src/accounts/api-keys.js';
import { createOrganizationWithOwner } from '../../src/accounts/organizations.js';
import { addChannel } from '../../src/channels/channels.js';
import type { Db } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

export const SEEDED_POSTS = 10_000;
const CHANNELS = 3;
const MEDIA = 30;

export interface Seeded {
  apiKey: string;
  channelIds: string[];
  /** A post of the organization, for GET /posts/{id}. */
  postId: string;
}

/**
 * One organization with an API key, 3 sandbox channels, 10,000 posts (one in five a draft, the rest
 * scheduled over the coming year, none due during the run) and 30 media.
 */
export async function seed(db: Db): Promise<Seeded> {
  await migrateToLatest(db);
  const { organization } = await createOrganizationWithOwner(db, {
    organizationName: 'Benchmark',
    email: 'bench@example.com',
    password: 'correct horse battery staple',
  });
  const { secret } = await createApiKey(db, organization.id, 'benchmark');
  const channelIds: string[] = [];
  for (let i = 0; i < CHANNELS; i++) {
    const channel = await addChannel(db, {
      organization_id: organization.id,
      provider: 'sandbox',
      name: `Channel ${i + 1}`,
      username: null,
      picture: null,
    });
    channelIds.push(channel.id);
  }
  await sql`
    insert into posts (
      id, organization_id, group_id, channel_id, content, media_ids, settings, status,
      scheduled_at, created_at, updated_at
    )
    select 'post_seed' || i, ${organization.id}, 'grp_seed' || i, (${sql.val(channelIds)}::text[])[1 + i % ${CHANNELS}],
      'Seeded post number ' || i, '[]'::jsonb, '{"__type": "sandbox", "outcome": "published", "failingPart": 1}'::jsonb,
      case when i % 5 = 0 then 'draft' else 'scheduled' end,
      case when i % 5 = 0 then null else now() + interval '2 days' + i * interval '53 minutes' end,
      now(), now()
    from generate_series(1, ${SEEDED_POSTS}) as i`.execute(db);
  await sql`
    insert into media (id, organization_id, file_name, content_type, kind, size, storage_key, duration_ms, created_at)
    select 'med_seed' || i, ${organization.id}, 'photo-' || i || '.jpg', 'image/jpeg', 'image', 1024 * i,
      'media/' || ${organization.id} || '/med_seed' || i, null, now() - i * interval '1 minute'
    from generate_series(1, ${MEDIA}) as i`.execute(db);
  await sql`analyze`.execute(db);
  return { apiKey: secret, channelIds, postId: 'post_seed1' };
}
