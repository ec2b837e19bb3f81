import { once } from 'node:events';
import express, { type Request, type Response, type Router } from 'express';
import {
  AUDIT_ACTIONS,
  auditActors,
  eachAuditEntry,
  isAuditAction,
  listAuditEntries,
  type AuditEntry,
  type AuditFilter,
  type AuditPosition,
} from '../audit/log.js';
import { ValidationError } from '../core/errors.js';
import type { AppContext } from '../http/context.js';
import { formatTime } from '../pages/forms.js';
import { renderPage } from '../pages/render.js';
import { signedIn } from './signed-in.js';
import { zoneOf } from './time-zone.js';

const PAGE_SIZE = 50;

/** The filters of the page and of its exports, from the query; a value the page never offers is refused. */
function filterOf(req: Request): AuditFilter {
  const action = typeof req.query.action === 'string' ? req.query.action : '';
  const actor = typeof req.query.actor === 'string' ? req.query.actor : '';
  const filter: AuditFilter = {};
  if (isAuditAction(action)) filter.action = action;
  else if (action) {
    throw new ValidationError('Choose one of the kinds of change the list offers.', [
      { path: 'action', message: 'unknown kind of change' },
    ]);
  }
  if (actor.length > 100) {
    throw new ValidationError('Choose one of the people and keys the list offers.', [
      { path: 'actor', message: 'unknown actor' },
    ]);
  }
  if (actor) filter.actorId = actor;
  return filter;
}

// Where the next page starts, in its link: the time and the id of the last entry shown.
const encodePosition = (position: AuditPosition) => `${position.at.toISOString()}~${position.id}`;

function positionOf(req: Request): AuditPosition | undefined {
  const value = req.query.before;
  if (value === undefined || value === '') return undefined;
  const match =
    typeof value === 'string' ? /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)~(aud_[0-9A-Za-z]{20})$/.exec(value) : null;
  const at = match ? new Date(match[1]!) : undefined;
  if (!match || !at || Number.isNaN(at.getTime())) {
    throw new ValidationError('This page of the audit log does not exist; start again from the first page.', [
      { path: 'before', message: 'not a position in the audit log' },
    ]);
  }
  return { at, id: match[2]! };
}

function queryString(filter: AuditFilter, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams({
    ...(filter.action ? { action: filter.action } : {}),
    ...(filter.actorId ? { actor: filter.actorId } : {}),
    ...extra,
  });
  const text = params.toString();
  return text ? `?${text}` : '';
}

const describe = (action: string) => (isAuditAction(action) ? AUDIT_ACTIONS[action] : action);

/** What an entry's details say, in a line: `role: editor → admin`, `credentials: kept`. */
function detailsText(details: Record<string, unknown>): string {
  if ('from' in details && 'to' in details) return `${String(details.from)} → ${String(details.to)}`;
  return Object.entries(details)
    .map(([key, value]) => `${key}: ${Array.isArray(value) ? value.join(', ') : String(value)}`)
    .join('; ');
}

/**
 * Settings → Audit log, for admins and owners: who changed the organization's members, roles, API keys,
 * apps, webhooks and channels and who deleted posts, newest first, a page at a time, filtered by kind of
 * change and by who did it; downloadable whole (with the filters) as CSV or JSON, streamed.
 */
export function auditLogPage(ctx: AppContext): Router {
  const router = express.Router();

  router.get('/settings/audit-log', async (req, res) => {
    const { organization } = signedIn(res);
    const filter = filterOf(req);
    const after = positionOf(req);
    const zone = zoneOf(res);
    const page = await listAuditEntries(ctx.db, organization.id, { filter, after, limit: PAGE_SIZE });
    renderPage(res, '/web/templates/audit-log', {
      title: 'Audit log',
      path: '/settings/audit-log',
      retentionDays: ctx.config.retention.auditLogDays,
      filter: { action: filter.action ?? '', actor: filter.actorId ?? '' },
      actions: Object.entries(AUDIT_ACTIONS).map(([action, description]) => ({ action, description })),
      actors: await auditActors(ctx.db, organization.id),
      entries: page.entries.map((entry) => ({
        ...entry,
        atIso: entry.at.toISOString(),
        atText: formatTime(entry.at, zone),
        description: describe(entry.action),
        detailsText: detailsText(entry.details),
      })),
      first: after !== undefined,
      firstLink: `/settings/audit-log${queryString(filter)}`,
      next: page.next ? `/settings/audit-log${queryString(filter, { before: encodePosition(page.next) })}` : null,
      exportCsv: `/settings/audit-log/export${queryString(filter, { format: 'csv' })}`,
      exportJson: `/settings/audit-log/export${queryString(filter, { format: 'json' })}`,
    });
  });

  router.get('/settings/audit-log/export', async (req, res) => {
    const { organization } = signedIn(res);
    const filter = filterOf(req);
    const format = req.query.format === 'json' ? 'json' : req.query.format === 'csv' ? 'csv' : undefined;
    if (!format) {
      throw new ValidationError('Choose CSV or JSON for the export.', [{ path: 'format', message: 'csv or json' }]);
    }
    const day = ctx.clock.now().toISOString().slice(0, 10);
    res.setHeader('Content-Type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="audit-log-${day}.${format}"`);
    res.setHeader('Cache-Control', 'no-store');
    const entries = eachAuditEntry(ctx.db, organization.id, filter);
    if (format === 'csv') await streamCsv(res, entries);
    else await streamJson(res, entries);
  });

  return router;
}

/** Writes a chunk, waiting while the client is slower than the database; false once the client has gone. */
async function write(res: Response, chunk: string): Promise<boolean> {
  if (res.destroyed) return false;
  if (!res.write(chunk)) await Promise.race([once(res, 'drain'), once(res, 'close')]);
  return !res.destroyed;
}

export const CSV_COLUMNS = [
  'time',
  'action',
  'description',
  'actor_type',
  'actor_id',
  'actor',
  'subject_type',
  'subject_id',
  'subject',
  'details',
] as const;

/**
 * A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. A field a spreadsheet
 * would take for a formula (it starts with `=`, `+`, `-`, `@`, a tab or a carriage return: a key's name
 * or a webhook's URL is anybody's text) is prefixed with `'`, so opening the export runs nothing.
 */
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

function csvRow(entry: AuditEntry): string {
  const values = [
    entry.at.toISOString(),
    entry.action,
    describe(entry.action),
    entry.actor.type,
    entry.actor.id ?? '',
    entry.actor.label,
    entry.subject.type,
    entry.subject.id ?? '',
    entry.subject.label,
    JSON.stringify(entry.details),
  ];
  return `${values.map(csvField).join(',')}\r\n`;
}

async function streamCsv(res: Response, entries: AsyncGenerator<AuditEntry>): Promise<void> {
  // A byte-order mark: spreadsheets then read the file as UTF-8.
  if (!(await write(res, `\uFEFF${CSV_COLUMNS.join(',')}\r\n`))) return;
  for await (const entry of entries) if (!(await write(res, csvRow(entry)))) return;
  res.end();
}

async function streamJson(res: Response, entries: AsyncGenerator<AuditEntry>): Promise<void> {
  if (!(await write(res, '['))) return;
  let first = true;
  for await (const entry of entries) {
    const body = { ...entry, at: entry.at.toISOString(), description: describe(entry.action) };
    if (!(await write(res, `${first ? '' : ','}\n${JSON.stringify(body)}`))) return;
    first = false;
  }
  res.end(first ? ']\n' : '\n]\n');
}
