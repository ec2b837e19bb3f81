import { listMembers } from '../accounts/members.js';
import { toChannelBody } from '../channels/channels.js';
import type { Db } from '../db/database.js';
import { toPostEventBody, type PostEventBody } from '../posts/events.js';
import { toPostBody } from '../posts/post-body.js';

/**
 * An organization's data, as a person may ask for it under data-protection law: its members, its
 * channels (never their tokens), its media (what they are, not the files), and its posts with their
 * history, in the Public API's representations. One JSON document, or one CSV file per kind; both are
 * produced a page of rows at a time, to be streamed, however many posts there are.
 */

const PAGE = 500;

/** The version of the export's format, in the document (`format`). */
export const EXPORT_FORMAT = 'organization-export/1';

export const CSV_KINDS = ['posts', 'post-history', 'channels', 'media', 'members'] as const;
export type CsvKind = (typeof CSV_KINDS)[number];

export function isCsvKind(value: string): value is CsvKind {
  return (CSV_KINDS as readonly string[]).includes(value);
}

async function members(db: Db, organizationId: string) {
  return (await listMembers(db, organizationId)).map((member) => ({
    userId: member.userId,
    name: member.name,
    email: member.email,
    role: member.role,
    joinedAt: member.joinedAt.toISOString(),
  }));
}

async function channels(db: Db, organizationId: string) {
  const rows = await db
    .selectFrom('channels')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  // Removed channels too: their posts name them. `removed` says which.
  return rows.map((channel) => ({ ...toChannelBody(channel), removed: channel.status === 'removed' }));
}

async function* mediaPages(db: Db, organizationId: string) {
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('media')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)
      .execute();
    yield rows.map((media) => ({
      id: media.id,
      fileName: media.file_name,
      contentType: media.content_type,
      kind: media.kind,
      size: Number(media.size),
      width: media.width,
      height: media.height,
      durationMs: media.duration_ms,
      pageCount: media.page_count,
      createdAt: media.created_at.toISOString(),
    }));
    if (rows.length < PAGE) return;
    after = rows.at(-1)!.id;
  }
}

/** The posts, a page at a time, each with its history oldest first. */
async function* postPages(db: Db, organizationId: string) {
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('posts')
      .innerJoin('channels', 'channels.id', 'posts.channel_id')
      .selectAll('posts')
      .select('channels.provider')
      .where('posts.organization_id', '=', organizationId)
      .where('posts.id', '>', after)
      .orderBy('posts.id')
      .limit(PAGE)
      .execute();
    if (rows.length === 0) return;
    const events = await db
      .selectFrom('post_events')
      .select(['id', 'post_id', 'type', 'at', 'details', 'post'])
      .where('organization_id', '=', organizationId)
      .where(
        'post_id',
        'in',
        rows.map((row) => row.id),
      )
      .orderBy('post_id')
      .orderBy('id')
      .execute();
    const history = new Map<string, PostEventBody[]>();
    for (const event of events.map(toPostEventBody)) {
      const list = history.get(event.postId);
      if (list) list.push(event);
      else history.set(event.postId, [event]);
    }
    yield rows.map((row) => ({ ...toPostBody(row), history: history.get(row.id) ?? [] }));
    if (rows.length < PAGE) return;
    after = rows.at(-1)!.id;
  }
}

/** The export as one JSON document, in chunks of text. */
export async function* exportJson(
  db: Db,
  organization: { id: string; name: string; created_at: Date },
  now: Date,
): AsyncGenerator<string> {
  const head = {
    format: EXPORT_FORMAT,
    exportedAt: now.toISOString(),
    organization: { id: organization.id, name: organization.name, createdAt: organization.created_at.toISOString() },
    members: await members(db, organization.id),
    channels: await channels(db, organization.id),
  };
  yield JSON.stringify(head).slice(0, -1);
  for (const [name, pages] of [
    ['media', mediaPages(db, organization.id)],
    ['posts', postPages(db, organization.id)],
  ] as const) {
    yield `,${JSON.stringify(name)}:[`;
    let first = true;
    for await (const page of pages) {
      if (page.length === 0) continue;
      yield (first ? '' : ',') + page.map((item) => JSON.stringify(item)).join(',');
      first = false;
    }
    yield ']';
  }
  yield '}\n';
}

/**
 * A field of CSV (RFC 4180): quoted when it holds a comma, quote or line break. A text that a
 * spreadsheet would run as a formula (starting with =, +, -, @, tab or carriage return) gets a leading
 * apostrophe, as OWASP advises against CSV injection: a post's text is anybody's words.
 */
export function csvField(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function csvLine(values: unknown[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** Columns of each CSV file: a header and the value of each row. */
const COLUMNS = {
  members: ['userId', 'name', 'email', 'role', 'joinedAt'],
  channels: ['id', 'provider', 'name', 'username', 'status', 'removed', 'createdAt'],
  media: ['id', 'fileName', 'contentType', 'kind', 'size', 'width', 'height', 'durationMs', 'pageCount', 'createdAt'],
  posts: [
    'id',
    'group',
    'channelId',
    'provider',
    'status',
    'content',
    'mediaIds',
    'altTexts',
    'thread',
    'firstComment',
    'settings',
    'scheduledAt',
    'publishedAt',
    'releaseId',
    'releaseUrl',
    'error',
    'createdAt',
    'updatedAt',
  ],
  'post-history': ['postId', 'id', 'type', 'at', 'status', 'scheduledAt', 'details'],
} as const satisfies Record<CsvKind, readonly string[]>;

/** One kind of the export as CSV with a header line, in chunks of text; lists and objects are JSON in their field. */
export async function* exportCsv(db: Db, organizationId: string, kind: CsvKind): AsyncGenerator<string> {
  const columns: readonly string[] = COLUMNS[kind];
  yield csvLine([...columns]);
  const lines = (rows: Record<string, unknown>[]) =>
    rows.map((row) => csvLine(columns.map((column) => row[column]))).join('');
  switch (kind) {
    case 'members':
      yield lines(await members(db, organizationId));
      return;
    case 'channels':
      yield lines(await channels(db, organizationId));
      return;
    case 'media':
      for await (const page of mediaPages(db, organizationId)) yield lines(page);
      return;
    case 'posts':
      for await (const page of postPages(db, organizationId)) yield lines(page);
      return;
    case 'post-history':
      for await (const page of postPages(db, organizationId)) {
        yield lines(
          page.flatMap((post) =>
            post.history.map(({ postId, id, type, at, status, scheduledAt, ...details }) => ({
              postId,
              id,
              type,
              at,
              status,
              scheduledAt,
              details: Object.keys(details).length > 0 ? details : null,
            })),
          ),
        );
      }
  }
}
