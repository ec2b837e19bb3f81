import { createHash } from 'node:crypto';
import type { components } from '../../generated/public-v1.js';
import { ConflictError, DomainError, UnprocessableError, type ErrorDetail } from '../core/errors.js';
import { assertCan, type Actor } from '../core/roles.js';
import type { Db } from '../db/database.js';
import { transaction } from '../db/transaction.js';
import { RequestBodies } from '../http/request-bodies.js';
import type { PostsContext } from './context.js';
import { checkCreateRequest, writeCheckedCreate, type CheckedCreate } from './create.js';
import { canonicalJson } from './idempotency.js';
import { ImportDownloads, isMediaUrl, MAX_IMPORT_URLS, mediaUrlProblem } from './import-media.js';
import { importRows, type ImportRow } from './import-rows.js';
import type { MediaContext } from '../media/storage.js';

type ImportPostsRequest = components['schemas']['ImportPostsRequest'];
type ImportReport = components['schemas']['ImportReport'];
type RowReport = components['schemas']['ImportRowReport'];
type CreatePostRequest = components['schemas']['CreatePostRequest'];

const MAX_KEY_LENGTH = 200;

// The contract's check of a create's body, as `POST /public/v1/posts` runs it, for each row.
const bodies = new RequestBodies();

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

/** A row's key: the client's, or its columns' canonical JSON, so the same row keeps its key. */
function keyHashOf(row: ImportRow): string {
  if (row.key !== null) return sha256(`key:${row.key}`);
  const { channels, text, time, media, settings, status } = row;
  return sha256(`row:${canonicalJson({ channels, text, time, media, settings: settings ?? null, status })}`);
}

/** An import refused for its rows' problems, with the report a dry run would have given. */
export class ImportRefusedError extends UnprocessableError {
  constructor(
    readonly report: ImportReport,
    message: string,
    details: ErrorDetail[],
  ) {
    super(message, details);
  }
}

/** A row that was checked: its report, and what to write when it is to be created. */
interface CheckedRow {
  row: ImportRow;
  keyHash: string;
  report: RowReport;
  /** The row is neither imported before nor a repeat: it is checked, and created when it is valid. */
  isNew: boolean;
  create: CheckedCreate | undefined;
}

/**
 * Checks every row of an import by the rules of a create and, unless it is a dry run, creates the rows
 * not imported before, all or none, in one transaction. Each row is one create call: one post per
 * channel, in a group of its own. The media URLs of the rows are downloaded first (see ImportDownloads).
 */
export async function importPosts(
  ctx: PostsContext & MediaContext,
  actor: Actor,
  request: ImportPostsRequest,
  dryRun: boolean,
  /** Called before the rows' media URLs are downloaded, when there are any: throws to refuse them. */
  beforeDownloads: () => void = () => undefined,
): Promise<ImportReport> {
  const downloads = new ImportDownloads(ctx, actor.organizationId, dryRun);
  try {
    return await checkAndImport(ctx, actor, request, dryRun, downloads, beforeDownloads);
  } catch (error) {
    await downloads.discard();
    throw error;
  }
}

async function checkAndImport(
  ctx: PostsContext,
  actor: Actor,
  request: ImportPostsRequest,
  dryRun: boolean,
  downloads: ImportDownloads,
  beforeDownloads: () => void,
): Promise<ImportReport> {
  const { organizationId } = actor;
  const rows = importRows(request);
  if (rows.some((row) => timingOf(row).type !== 'draft'))
    assertCan(actor, 'posts:publish', 'import posts that are scheduled; import them as drafts (an empty time)');
  const providers = await channelProviders(ctx.db, organizationId);
  const keyHashes = rows.map(keyHashOf);
  const imported = await importedBefore(ctx.db, organizationId, keyHashes);

  const checked: CheckedRow[] = [];
  const firstWithKey = new Map<string, number>();
  for (const [index, row] of rows.entries()) {
    const keyHash = keyHashes[index]!;
    const report: RowReport = { row: row.number, key: row.key, outcome: 'valid', group: null, postIds: [], errors: [] };
    const before = imported.get(keyHash);
    const repeated = firstWithKey.get(keyHash);
    firstWithKey.set(keyHash, repeated ?? row.number);
    if (before) {
      Object.assign(report, { outcome: 'existing', group: before.group, postIds: before.postIds });
    } else if (repeated !== undefined) {
      report.errors.push({
        field: row.key === null ? 'row' : 'key',
        message: row.key === null ? `repeats row ${repeated}.` : `is also the key of row ${repeated}.`,
      });
    } else {
      report.errors.push(...columnProblems(row, providers));
    }
    checked.push({ row, keyHash, report, isNew: !before && repeated === undefined, create: undefined });
  }

  // The files of the rows to create, before their rules are checked: the rules read the media they become.
  const urls = new Set(
    checked.flatMap((one) => (one.isNew && one.report.errors.length === 0 ? one.row.media.filter(isMediaUrl) : [])),
  );
  if (urls.size > 0) beforeDownloads();
  if (urls.size > MAX_IMPORT_URLS) {
    throw new UnprocessableError(
      `An import downloads at most ${MAX_IMPORT_URLS} media files; this one names ${urls.size} URLs. Upload the ` +
        'files first (POST /public/v1/media/upload-from-url) and write their media ids, or split the file.',
      [{ path: 'csv' in request ? 'csv' : 'rows', message: `names ${urls.size} media URLs` }],
    );
  }
  await downloads.fetch([...urls]);
  // After the downloads, which may take minutes: the rows are timed and checked as of now.
  const now = ctx.clock.now();

  for (const one of checked) {
    if (one.isNew && one.report.errors.length === 0) {
      const result = await checkRow(ctx, organizationId, one.row, providers, now, downloads);
      one.report.errors.push(...result.errors);
      one.create = result.create;
    }
    if (one.report.errors.length > 0) one.report.outcome = 'invalid';
  }

  const reports = checked.map((one) => one.report);
  const count = (outcome: string) => reports.filter((report) => report.outcome === outcome).length;
  if (dryRun) return { dryRun, created: 0, existing: count('existing'), invalid: count('invalid'), rows: reports };
  const invalid = count('invalid');
  if (invalid > 0) {
    throw new ImportRefusedError(
      { dryRun, created: 0, existing: count('existing'), invalid, rows: reports },
      `Nothing was imported: ${invalid === 1 ? '1 row breaks' : `${invalid} rows break`} rules, listed in ` +
        'details (rows[N] is the row numbered N, the first row of data being 1); a dry run reports every row.',
      reports.flatMap((report) =>
        report.errors.map((error) => ({ path: `rows[${report.row}].${error.field}`, message: error.message })),
      ),
    );
  }
  await transaction(ctx.db, async (trx) => {
    for (const one of checked) {
      if (!one.create) continue;
      const { group, posts } = await writeRow(ctx, trx, one.row, one.create);
      const claimed = await trx
        .insertInto('post_imports')
        .values({ organization_id: organizationId, key_hash: one.keyHash, group_id: group, created_at: now })
        .onConflict((oc) => oc.columns(['organization_id', 'key_hash']).doNothing())
        .returning('key_hash')
        .executeTakeFirst();
      if (!claimed)
        throw new ConflictError(
          `Row ${one.row.number} was imported by another request meanwhile; nothing was imported. ` +
            'Import the file again: the rows imported meanwhile are reported as existing.',
        );
      Object.assign(one.report, { outcome: 'created', group, postIds: posts.map((post) => post.id) });
    }
  });
  return { dryRun, created: count('created'), existing: count('existing'), invalid: 0, rows: reports };
}

/**
 * Writes a row, whose problems at write time (a daily quota, a channel disabled meanwhile) name the row.
 */
async function writeRow(ctx: PostsContext, trx: Db, row: ImportRow, create: CheckedCreate) {
  try {
    return await writeCheckedCreate(ctx, trx, create);
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const details = (error.details ?? [{ path: '', message: error.message }]).map((detail) => ({
      path: `rows[${row.number}].${fieldOf(detail.path)}`,
      message: detail.message,
    }));
    const NamedError = error.constructor as new (message: string, details: ErrorDetail[]) => DomainError;
    throw new NamedError(`Nothing was imported: row ${row.number} was refused. ${error.message}`, details);
  }
}

/** What `type` a row asks for, and its `date`. */
function timingOf(row: ImportRow): { type: string; date?: string } {
  // Only a row waiting to be published is timed: `published`, `skipped`, `failed`… (an export's) are drafts.
  const status = row.status?.trim().toLowerCase() ?? '';
  const draft = status !== '' && status !== 'scheduled';
  if (row.time === null) return { type: 'draft' };
  if (row.time === 'now') return { type: draft ? 'draft' : 'now' };
  // The queue's slots belong to the channels' posting schedules: a create of type `queue` takes them.
  if (row.time === 'queue') return { type: draft ? 'draft' : 'queue' };
  return { type: draft ? 'draft' : 'schedule', date: row.time };
}

/** The settings a row gives a channel: the object of its network, or the one object without `__type`. */
function settingsFor(row: ImportRow, provider: string | undefined): unknown {
  const given = Array.isArray(row.settings)
    ? (row.settings as unknown[])
    : row.settings === undefined
      ? []
      : [row.settings];
  const objects = given.filter((one): one is Record<string, unknown> => typeof one === 'object' && one !== null);
  const untyped = objects.filter((one) => !('__type' in one));
  if (untyped.length === 1 && given.length === 1 && provider !== undefined) return { ...untyped[0], __type: provider };
  return objects.find((one) => one.__type === provider);
}

/** The create request a row stands for: the per-channel form, one post per channel. */
function requestOf(row: ImportRow, providers: Map<string, string>, downloads: ImportDownloads): unknown {
  const mediaIds = row.media.map((entry) => downloads.mediaIdOf(entry));
  return {
    ...timingOf(row),
    posts: row.channels.map((channelId) => {
      const settings = settingsFor(row, providers.get(channelId));
      return {
        channelId,
        content: row.text,
        ...(mediaIds.length > 0 ? { mediaIds } : {}),
        ...(settings === undefined ? {} : { settings }),
      };
    }),
  };
}

/** A create's problem path as the row's column. */
function fieldOf(path: string): string {
  const field = /^posts(?:\[\d+\])?\.?([A-Za-z]*)/.exec(path)?.[1];
  if (path === 'date' || path === 'type' || path.startsWith('date') || path.startsWith('type')) return 'time';
  switch (field) {
    case 'channelId':
      return 'channels';
    case 'content':
      return 'text';
    case 'mediaIds':
      return 'media';
    case 'settings':
      return 'settings';
    case '':
      return 'channels';
    default:
      return 'row';
  }
}

/** What is wrong with a row's columns themselves, before its rules are checked and its media downloaded. */
function columnProblems(row: ImportRow, providers: Map<string, string>): { field: string; message: string }[] {
  const errors = row.problems.map((problem) => ({ field: problem.path, message: problem.message }));
  if (row.key !== null && row.key.length > MAX_KEY_LENGTH)
    errors.push({ field: 'key', message: `has ${row.key.length} characters; a key has at most ${MAX_KEY_LENGTH}.` });
  if (row.channels.length === 0) errors.push({ field: 'channels', message: 'Name at least one channel (ch_…).' });
  for (const entry of row.media.filter(isMediaUrl)) {
    const problem = mediaUrlProblem(entry);
    if (problem !== undefined) errors.push({ field: 'media', message: problem });
  }
  const networks = new Set(row.channels.map((id) => providers.get(id)));
  const given = Array.isArray(row.settings) ? (row.settings as unknown[]) : [row.settings];
  for (const one of given) {
    const type = typeof one === 'object' && one !== null ? (one as { __type?: unknown }).__type : undefined;
    if (typeof type === 'string' && !networks.has(type))
      errors.push({
        field: 'settings',
        message: `are for ${type}, and none of the row's channels is a ${type} channel.`,
      });
  }
  return errors;
}

/** Checks a row by the rules of a create, its media URLs being the media downloaded from them. */
async function checkRow(
  ctx: PostsContext,
  organizationId: string,
  row: ImportRow,
  providers: Map<string, string>,
  now: Date,
  downloads: ImportDownloads,
): Promise<{ errors: { field: string; message: string }[]; create: CheckedCreate | undefined }> {
  const failed = row.media.flatMap((entry) => {
    const problem = downloads.problemOf(entry);
    return problem === undefined ? [] : [{ field: 'media', message: `${entry}: ${problem}` }];
  });
  if (failed.length > 0) return { errors: unique(failed), create: undefined };

  const request = requestOf(row, providers, downloads);
  const contract = bodies.check('createPost', request);
  if (contract.length > 0) return { errors: contractErrors(row, contract, downloads), create: undefined };
  const { checked, problems } = await checkCreateRequest(
    ctx,
    organizationId,
    request as CreatePostRequest,
    now,
    downloads.unstored,
  );
  const errors = problems.map((problem) => {
    const message = downloads.inRowTerms(problem.message);
    // A rule about one file of a row whose file came from a URL names the URL.
    const index = /^posts\[\d+\]\.mediaIds\[(\d+)\]/.exec(problem.path)?.[1];
    const entry = index === undefined ? undefined : row.media[Number(index)];
    const named = entry !== undefined && isMediaUrl(entry) && !message.includes(entry);
    return { field: fieldOf(problem.path), message: named ? `${entry}: ${message}` : message };
  });
  return { errors: unique(errors), create: checked };
}

/** The contract's problems with a row's create, in the row's words where the contract's are a validator's. */
function contractErrors(
  row: ImportRow,
  details: ErrorDetail[],
  downloads: ImportDownloads,
): { field: string; message: string }[] {
  return unique(
    details.map((detail) => {
      const field = fieldOf(detail.path);
      if (field === 'time')
        return {
          field,
          message:
            `"${row.time}" is no time this server takes: write an instant with its offset ` +
            '(2026-12-01T09:30:00+01:00), "now", or leave it empty for a draft.',
        };
      const within = detail.path.replace(/^posts\[\d+\]\.?/, '');
      const message = downloads.inRowTerms(detail.message);
      return { field, message: within === '' ? message : `${within}: ${message}` };
    }),
  );
}

function unique(errors: { field: string; message: string }[]) {
  const seen = new Set<string>();
  return errors.filter((error) => {
    const key = `${error.field}\n${error.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The network of each of the organization's channels, to give each channel its settings. */
async function channelProviders(db: Db, organizationId: string): Promise<Map<string, string>> {
  const rows = await db
    .selectFrom('channels')
    .select(['id', 'provider'])
    .where('organization_id', '=', organizationId)
    .where('status', '<>', 'removed')
    .execute();
  return new Map(rows.map((row) => [row.id, row.provider]));
}

/** The rows imported before, by key, with the posts they created that still exist. */
async function importedBefore(
  db: Db,
  organizationId: string,
  keyHashes: string[],
): Promise<Map<string, { group: string; postIds: string[] }>> {
  const found = await db
    .selectFrom('post_imports')
    .leftJoin('posts', (join) =>
      join.onRef('posts.group_id', '=', 'post_imports.group_id').on('posts.organization_id', '=', organizationId),
    )
    .select(['post_imports.key_hash', 'post_imports.group_id', 'posts.id as post_id'])
    .where('post_imports.organization_id', '=', organizationId)
    .where('post_imports.key_hash', 'in', [...new Set(keyHashes)])
    .orderBy('posts.id')
    .execute();
  const imported = new Map<string, { group: string; postIds: string[] }>();
  for (const row of found) {
    const entry = imported.get(row.key_hash) ?? { group: row.group_id, postIds: [] };
    if (row.post_id !== null) entry.postIds.push(row.post_id);
    imported.set(row.key_hash, entry);
  }
  return imported;
}
