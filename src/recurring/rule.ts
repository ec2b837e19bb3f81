import { DateTime, IANAZone } from 'luxon';
import * as rruleExports from 'rrule';
import type { Options } from 'rrule';
import { UnprocessableError } from '../core/errors.js';

// rrule's package has no `exports` map: Node loads its `main`, a UMD bundle whose exports an ES module
// sees as its default export only, while esbuild's bundle takes its ES module (`module`) with named
// exports. Either way, the library.
const { RRule, Frequency } =
  'RRule' in rruleExports ? rruleExports : (rruleExports as unknown as { default: typeof rruleExports }).default;

/**
 * A series' rule, counted in its time zone. rrule counts in "floating" time: its dates are wall-clock
 * times written as if they were UTC (its README: "returned 'UTC' dates are always meant to be
 * interpreted as dates in your local timezone"). Each occurrence's wall-clock time is then placed in
 * the series' zone with luxon, so 9:00 stays 9:00 across daylight-saving changes; a time that a
 * change skips (2:30 on the night clocks go forward) moves forward by the gap, as luxon does.
 */
export interface Recurrence {
  /** `RRULE` text without `DTSTART`, as stored. */
  rule: string;
  timeZone: string;
  startsAt: Date;
  endsAt: Date | null;
}

/** The most occurrences one call lists: a rule is counted in bounded steps, never to its end. */
const MAX_OCCURRENCES = 1000;

/** The rule's text, checked and written the one way it is stored; `422` naming `path` when it is not valid. */
export function normalizeRule(text: string, path = 'rule'): string {
  const refuse = (message: string): never => {
    throw new UnprocessableError(`The recurrence rule is not valid: ${message}.`, [{ path, message }]);
  };
  const body = text.trim().replace(/^RRULE:/i, '');
  if (/\n|DTSTART|TZID|EXDATE|RDATE/i.test(body))
    refuse('give one RRULE without DTSTART (startsAt says when the series starts) or other properties');
  let options: Partial<Options>;
  try {
    options = RRule.parseString(body);
  } catch (error) {
    // rrule's own words name the part it could not read ("Unknown RRULE property 'FOO'"); a
    // TypeError is its parser tripping on a value (BYDAY=XX), which says nothing to a person.
    const why = error instanceof TypeError ? '' : ` (${(error as Error).message})`;
    return refuse(`it cannot be read as RFC 5545 RRULE text${why}`);
  }
  if (options.freq === undefined) {
    refuse(
      /(^|;)FREQ=/i.test(body)
        ? 'FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY or HOURLY'
        : 'FREQ is missing (e.g. FREQ=WEEKLY;BYDAY=MO)',
    );
  }
  if (options.freq === Frequency.MINUTELY || options.freq === Frequency.SECONDLY)
    refuse('FREQ may be HOURLY at the most frequent');
  if (options.bysecond !== undefined && options.bysecond !== null) refuse('BYSECOND is not supported');
  for (const [name, value] of [
    ['INTERVAL', options.interval],
    ['COUNT', options.count],
  ] as const) {
    if (value !== undefined && value !== null && !(Number.isInteger(value) && value >= 1))
      refuse(`${name} must be a whole number from 1`);
  }
  try {
    return new RRule({ ...options, dtstart: null }).toString().replace(/^RRULE:/, '');
  } catch {
    return refuse('it cannot be read as RFC 5545 RRULE text');
  }
}

/** A zone the time-zone database knows, by the name given; `422` naming `path` otherwise. */
export function assertTimeZone(zone: string, path = 'timeZone'): void {
  if (!IANAZone.isValidZone(zone)) {
    throw new UnprocessableError(`${zone} is not a time zone; give an IANA name such as Europe/Berlin or UTC.`, [
      { path, message: 'is not an IANA time zone name' },
    ]);
  }
}

/** The wall-clock time of `instant` in `zone`, written as UTC (rrule's floating time). */
function floating(instant: Date, zone: string): Date {
  const local = DateTime.fromJSDate(instant, { zone });
  return new Date(
    Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second, local.millisecond),
  );
}

/** The instant of a floating wall-clock time in `zone`. */
function placed(wall: Date, zone: string): Date {
  return DateTime.fromObject(
    {
      year: wall.getUTCFullYear(),
      month: wall.getUTCMonth() + 1,
      day: wall.getUTCDate(),
      hour: wall.getUTCHours(),
      minute: wall.getUTCMinutes(),
      second: wall.getUTCSeconds(),
    },
    { zone },
  ).toJSDate();
}

function ruleOf(recurrence: Recurrence) {
  const options = RRule.parseString(recurrence.rule);
  return new RRule({
    ...options,
    dtstart: floating(recurrence.startsAt, recurrence.timeZone),
    // UNTIL is an instant (RFC 5545 wants it in UTC when DTSTART has a zone): floating too.
    until: options.until ? floating(options.until, recurrence.timeZone) : null,
  });
}

/**
 * The occurrences at or after `from` and before `to` (and before the series' end), oldest first, at
 * most `limit` of them.
 */
export function occurrencesBetween(recurrence: Recurrence, from: Date, to: Date, limit = MAX_OCCURRENCES): Date[] {
  const end = recurrence.endsAt && recurrence.endsAt < to ? recurrence.endsAt : to;
  if (end <= from) return [];
  const day = 86_400_000;
  // Floating bounds a day wider than the instants: a zone's offset is less than a day.
  const found: Date[] = [];
  ruleOf(recurrence).between(
    floating(new Date(from.getTime() - day), recurrence.timeZone),
    floating(new Date(end.getTime() + day), recurrence.timeZone),
    true,
    (wall) => {
      const at = placed(wall, recurrence.timeZone);
      if (at >= from && at < end) found.push(at);
      return found.length < limit;
    },
  );
  return found;
}

/** The next `count` occurrences from `now` on, looking at most ten years ahead. */
export function nextOccurrences(recurrence: Recurrence, now: Date, count = 5): Date[] {
  const from = now > recurrence.startsAt ? now : recurrence.startsAt;
  return occurrencesBetween(recurrence, from, new Date(from.getTime() + 10 * 366 * 86_400_000), count);
}

/**
 * The rule in English words ("every week on Monday"), as rrule says it; but for a day of the month
 * that shorter months lack (`BYMONTHDAY=28,29,30;BYSETPOS=-1`, the composer's "every month on the
 * 30th"), whose BYSETPOS rrule's words leave out.
 */
export function describeRule(rule: string): string {
  const options = RRule.parseString(rule);
  const days = options.bymonthday;
  const lastOfDays =
    options.freq === Frequency.MONTHLY &&
    [options.bysetpos ?? []].flat().join() === '-1' &&
    Array.isArray(days) &&
    days.length > 1 &&
    days.every((day, i) => day === 28 + i) &&
    (options.interval ?? 1) === 1 &&
    options.byweekday == null &&
    options.count == null &&
    options.until == null;
  if (lastOfDays) {
    const day = days.at(-1)!;
    return `every month on the ${day}${day === 31 ? 'st' : 'th'}, or the last day of a shorter month`;
  }
  return RRule.fromString(rule).toText();
}
