import express, { type Response, type Router } from 'express';
import type { components } from '../../generated/public-v1.js';
import { DomainError } from '../core/errors.js';
import { field } from '../pages/visitor.js';
import { renderPage } from '../pages/render.js';
import type { MediaContext } from '../media/storage.js';
import type { PostsContext } from '../posts/context.js';
import { ImportRefusedError, importPosts } from '../posts/import.js';
import { signedIn } from './signed-in.js';

type ImportReport = components['schemas']['ImportReport'];

const COLUMNS = [
  ['key', 'optional: the row’s own key, so that importing the file again creates nothing twice'],
  ['channels', 'channel ids, separated by spaces: one post per channel'],
  ['text', 'the post’s text'],
  ['time', 'when to publish, with its offset (2026-12-01T09:30:00+01:00), or now; empty for a draft'],
  ['media', 'media ids from the Media library, or links (https://…) to files to download into it, separated by spaces'],
  ['settings', 'each network’s settings as JSON, e.g. {"__type": "youtube", "privacyStatus": "public", …}'],
  ['status', 'draft keeps the row a draft even with a time'],
] as const;

/**
 * Posts → Import: a CSV file pasted (or read from a file by import.js) and checked row by row first, then
 * imported all or nothing: the Public API's import, with its report shown as a table.
 */
export function importPage(ctx: PostsContext & MediaContext): Router {
  const router = express.Router();
  router.get('/posts/import', (_req, res) => {
    showImport(res, { csv: '' });
  });
  router.post('/posts/import', async (req, res) => {
    const { actor } = signedIn(res);
    const csv = field(req, 'csv') ?? '';
    const dryRun = field(req, 'action') !== 'import';
    if (csv.trim() === '') return showImport(res, { csv, problem: 'Paste the CSV file first.' }, 400);
    try {
      const report = await importPosts(ctx, actor, { csv }, dryRun);
      showImport(res, { csv, report, imported: !dryRun });
    } catch (error) {
      if (!(error instanceof DomainError) || error.status >= 500) throw error;
      // A refusal for the rows' problems carries the report, which shows each row's.
      const report = error instanceof ImportRefusedError ? error.report : undefined;
      // The report names each row's own problems; what it cannot know (a daily quota, counted as the rows
      // are written) is the refusal's.
      const details =
        report && report.invalid > 0 ? [] : (error.details ?? []).map((detail) => `${detail.path}: ${detail.message}`);
      showImport(res, { csv, report, problem: error.message, details }, error.status);
    }
  });
  return router;
}

interface ShownImport {
  csv: string;
  report?: ImportReport | undefined;
  imported?: boolean;
  problem?: string;
  details?: string[];
}

function showImport(res: Response, shown: ShownImport, status = 200): void {
  const { report } = shown;
  renderPage(
    res,
    '/web/templates/import',
    {
      title: 'Import posts',
      path: '/posts',
      scripts: ['import.js'],
      columns: COLUMNS,
      csv: shown.csv,
      problem: shown.problem,
      details: shown.details ?? [],
      report,
      imported: shown.imported === true,
      canImport:
        report !== undefined && report.dryRun && report.invalid === 0 && report.rows.some((r) => r.outcome === 'valid'),
    },
    status,
  );
}
