import { parse } from 'csv-parse/sync';
import type { components } from '../../generated/public-v1.js';
import { ValidationError, type ErrorDetail } from '../core/errors.js';

type ImportPostsRequest = components['schemas']['ImportPostsRequest'];

/** The most rows one import takes: each is checked by every rule of a create, and written in one transaction. */
export const MAX_IMPORT_ROWS = 1000;

/** One row of an import, from either form, before any rule is checked. */
export interface ImportRow {
  /** The row's number in the file: the first row of data is 1. */
  number: number;
  key: string | null;
  channels: string[];
  text: string;
  time: string | null;
  media: string[];
  /** The per-network settings as given: an object, an array of objects, or `undefined` for none. */
  settings: unknown;
  status: string | null;
  /** What is wrong with the row's columns themselves (a settings cell that is no JSON). */
  problems: ErrorDetail[];
}

/** Ids in one cell, separated by spaces, commas or semicolons. */
const idsOf = (cell: string | undefined) => (cell ?? '').split(/[\s,;]+/).filter((id) => id !== '');
const blankToNull = (cell: string | null | undefined) =>
  cell === undefined || cell === null || cell.trim() === '' ? null : cell.trim();

/** The rows of an import request, CSV or JSON, in one shape. A CSV file that cannot be read is a 400. */
export function importRows(request: ImportPostsRequest): ImportRow[] {
  if ('csv' in request) return csvRows(request.csv);
  return request.rows.map((row, index) => ({
    number: index + 1,
    key: row.key ?? null,
    channels: row.channels,
    text: row.text ?? '',
    time: blankToNull(row.time),
    media: row.media ?? [],
    settings: row.settings ?? undefined,
    status: blankToNull(row.status),
    problems: [],
  }));
}

const COLUMNS = ['key', 'channels', 'text', 'time', 'media', 'settings', 'status'];

function csvRows(csv: string): ImportRow[] {
  let records: Record<string, string>[];
  try {
    records = parse<Record<string, string>>(csv, {
      bom: true,
      // Column names as people write them in a spreadsheet's header: `Channels`, ` text `.
      columns: (header: string[]) => header.map((name) => name.trim().toLowerCase()),
      skip_empty_lines: true,
      relax_quotes: false,
      // Stop reading past the limit: the answer says the file is too long without parsing all of it.
      to: MAX_IMPORT_ROWS + 1,
    });
  } catch (error) {
    throw new ValidationError('The CSV file cannot be read.', [{ path: 'csv', message: (error as Error).message }]);
  }
  if (records.length === 0) {
    throw new ValidationError('The CSV file has no rows: a header row, then one row per post.', [
      { path: 'csv', message: 'has a header row but no rows of posts' },
    ]);
  }
  if (records.length > MAX_IMPORT_ROWS) {
    throw new ValidationError(`An import takes at most ${MAX_IMPORT_ROWS} rows; split the file.`, [
      { path: 'csv', message: `has more than ${MAX_IMPORT_ROWS} rows` },
    ]);
  }
  const header = Object.keys(records[0]!);
  if (!header.includes('channels')) {
    throw new ValidationError('The CSV file has no `channels` column.', [
      {
        path: 'csv',
        message: `names the columns ${header.join(', ')}; an import reads ${COLUMNS.join(', ')} (channels is required)`,
      },
    ]);
  }
  return records.map((record, index) => {
    const problems: ErrorDetail[] = [];
    const settingsCell = blankToNull(record.settings);
    let settings: unknown;
    if (settingsCell !== null) {
      try {
        settings = JSON.parse(settingsCell);
      } catch {
        problems.push({
          path: 'settings',
          message: 'is not JSON: write an object with its "__type", or an array of them.',
        });
      }
    }
    return {
      number: index + 1,
      key: blankToNull(record.key),
      channels: idsOf(record.channels),
      text: record.text ?? '',
      time: blankToNull(record.time),
      media: idsOf(record.media),
      settings,
      status: blankToNull(record.status),
      problems,
    };
  });
}
