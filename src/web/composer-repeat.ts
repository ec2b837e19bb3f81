import { DateTime } from 'luxon';
import type { components } from '../../generated/public-v1.js';
import type { ErrorDetail } from '../core/errors.js';

type CreateSeriesRequest = components['schemas']['CreateSeriesRequest'];
type PostItem = components['schemas']['PostItem'];

/** The composer's Repeat fields as the form sent them: a choice, the custom rule, the last date. */
export interface RepeatValues {
  choice: string;
  rule: string;
  until: string;
}

export const noRepeat = (): RepeatValues => ({ choice: '', rule: '', until: '' });

/**
 * What Repeat offers. The weekly and monthly choices count from the day chosen above them, so they
 * need no script to follow it; anything else is an RFC 5545 rule typed as it is.
 */
export const REPEAT_CHOICES = [
  { value: '', label: 'Does not repeat' },
  { value: 'daily', label: 'Every day' },
  { value: 'weekdays', label: 'Every weekday (Monday to Friday)' },
  { value: 'weekly', label: 'Every week, on the weekday of the day chosen' },
  { value: 'monthly', label: 'Every month, on the date of the day chosen (or the last day of a shorter month)' },
  { value: 'custom', label: 'Another rule (RFC 5545 RRULE)' },
] as const;

const WEEKDAY_CODES = ['MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'];

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** The RRULE text of a choice, counted from `start` (the post's first time, in the reader's zone). */
export function repeatRule(repeat: RepeatValues, start: DateTime | undefined): string {
  switch (repeat.choice) {
    case 'daily':
      return 'FREQ=DAILY';
    case 'weekdays':
      return 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR';
    case 'weekly':
      return start ? `FREQ=WEEKLY;BYDAY=${WEEKDAY_CODES[start.weekday - 1]}` : 'FREQ=WEEKLY';
    case 'monthly':
      if (!start) return 'FREQ=MONTHLY';
      // The 29th to the 31st are not in every month: a shorter one has the post on its last day.
      return start.day <= 28
        ? `FREQ=MONTHLY;BYMONTHDAY=${start.day}`
        : `FREQ=MONTHLY;BYMONTHDAY=${range(28, start.day).join(',')};BYSETPOS=-1`;
    default:
      return repeat.rule.trim();
  }
}

/** Whether the form asks for a series rather than one post. */
export const repeats = (repeat: RepeatValues | undefined): repeat is RepeatValues =>
  repeat !== undefined && repeat.choice !== '';

/**
 * `POST /public/v1/series`'s request for the composer's posts, first published at `at`, repeating in
 * the reader's `zone` until the end of the day `repeat.until` there (none: until ended); with the
 * problems of the Repeat fields the contract cannot see (an unknown choice, a last day that is none).
 */
export function seriesRequest(
  posts: PostItem[],
  repeat: RepeatValues,
  at: Date | undefined,
  zone: string,
): { request: CreateSeriesRequest; problems: ErrorDetail[] } {
  const problems: ErrorDetail[] = [];
  if (!REPEAT_CHOICES.some((choice) => choice.value === repeat.choice))
    problems.push({ path: 'rule', message: 'Choose how the post repeats from the list.' });
  if (repeat.choice === 'custom' && repeat.rule.trim() === '')
    problems.push({ path: 'rule', message: 'Type the rule, such as FREQ=WEEKLY;BYDAY=MO,TH.' });
  const start = at ? DateTime.fromJSDate(at, { zone }) : undefined;
  let endsAt: string | undefined;
  if (repeat.until !== '') {
    const last = /^\d{4}-\d{2}-\d{2}$/.test(repeat.until) ? DateTime.fromISO(repeat.until, { zone }) : undefined;
    if (!last?.isValid) problems.push({ path: 'endsAt', message: 'Give the last date it repeats on.' });
    else endsAt = last.plus({ days: 1 }).startOf('day').toUTC().toISO()!;
  }
  const rule = repeatRule(repeat, start);
  return {
    request: {
      // A rule left empty is named by the contract's check (at `rule`).
      rule,
      timeZone: zone,
      startsAt: at?.toISOString() ?? '',
      ...(endsAt ? { endsAt } : {}),
      posts,
    },
    problems,
  };
}
