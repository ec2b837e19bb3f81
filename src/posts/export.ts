import { once } from 'node:events';
import type { Response } from 'express';
import { stringify } from 'csv-stringify/sync';
import type { components, operations } from '../../generated/public-v1.js';
import type { Db } from '../db/database.js';
import type { PostRow } from './post-body.js';
import { listPosts, type PostFilters } from './queries.js';

type ExportQuery = NonNullable<operations['exportPosts']['parameters']['query']>;
type PostExportRow = components['schemas']['PostExportRow'];

/** Posts read per query while an export streams: a bounded piece of memory however many posts there are. */
const BATCH = 500;

/** The columns of an export, those an import reads first. */
const COLUMNS = [
  'key',
  'channels',
  'text',
  'time',
  'media',
  'settings',
  'status',
  'provider',
  'publishedAt',
  'releaseUrl',
] as const;

function exportRow(post: PostRow): PostExportRow {
  return {
    key: post.id,
    channels: [post.channel_id],
    text: post.content,
    time: post.scheduled_at?.toISOString() ?? null,
    media: post.media_ids,
    settings: (post.settings ?? null) as PostExportRow['settings'],
    status: post.status,
    provider: post.provider,
    publishedAt: post.published_at?.toISOString() ?? null,
    releaseUrl: post.release_url,
  };
}

/** A row as CSV cells: lists separated by spaces, settings as JSON, nothing for `null`. */
function csvCells(row: PostExportRow): string[] {
  return [
    row.key,
    row.channels.join(' '),
    row.text,
    row.time ?? '',
    row.media.join(' '),
    row.settings === null ? '' : JSON.stringify(row.settings),
    row.status,
    row.provider,
    row.publishedAt ?? '',
    row.releaseUrl ?? '',
  ];
}

/** Every post the filters select, in the list's order, read a batch at a time by the list's keyset. */
async function* postsOf(db: Db, organizationId: string, filters: PostFilters): AsyncGenerator<PostRow[]> {
  let after: { scheduledAt: Date | null; id: string } | undefined;
  for (;;) {
    const batch = await listPosts(db, organizationId, filters, after, BATCH);
    if (batch.length > 0) yield batch;
    if (batch.length < BATCH) return;
    const last = batch[batch.length - 1]!;
    after = { scheduledAt: last.scheduled_at, id: last.id };
  }
}

/**
 * Streams the organization's posts as a CSV or JSON file, written as each batch is read and paused
 * while the client reads slower than the posts come, so an export of any size holds one batch at a time.
 */
export async function streamPostExport(db: Db, organizationId: string, query: ExportQuery, res: Response) {
  const format = query.format ?? 'csv';
  const filters: PostFilters = {
    from: query.from === undefined ? undefined : new Date(query.from),
    to: query.to === undefined ? undefined : new Date(query.to),
    channelIds: query.channelId,
    statuses: query.status,
    groupId: query.group,
  };
  res.setHeader('Content-Type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8');
  res.setHeader('Content-Disposition', `attachment; filename="posts.${format}"`);
  // A client that goes away ends the export: waiting for it to drain would hold the batch for good.
  const write = async (chunk: string) => {
    if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
  };
  let first = true;
  await write(format === 'csv' ? stringify([[...COLUMNS]]) : '{"rows":[');
  for await (const batch of postsOf(db, organizationId, filters)) {
    if (res.destroyed) return;
    const rows = batch.map(exportRow);
    if (format === 'csv') {
      await write(stringify(rows.map(csvCells)));
    } else {
      await write((first ? '' : ',') + rows.map((row) => JSON.stringify(row)).join(','));
      first = false;
    }
  }
  res.end(format === 'csv' ? '' : ']}');
}
