import { DateTime } from 'luxon';
import type { PostStatus } from '../core/contract.js';

export type CalendarView = 'week' | 'month';

/** A post as the calendar places it, with its time in the reader's zone. */
export interface CalendarPost {
  id: string;
  status: PostStatus;
  scheduledAt: Date;
  channelName: string;
  content: string;
  /** The first media of the post, as the chip shows it: an image as a small picture, else its kind. */
  thumbnail?: { kind: string; url: string | undefined; name: string };
}

export interface CalendarEntry extends CalendarPost {
  /** `HH:mm` in the reader's zone: the chip shows it, and a move by day keeps it. */
  time: string;
  /** `YYYY-MM-DD` in the reader's zone. */
  date: string;
  /** Whether it may be given another time: the user moves what the publisher has not taken. */
  movable: boolean;
}

export interface CalendarDay {
  date: string;
  /** `Mon 7 Dec`, as a column or cell heading. */
  label: string;
  /** `Mon`, and the day of the month, for the month view's headings and cells. */
  weekday: string;
  number: number;
  today: boolean;
  /** In the month view, whether the day belongs to the month shown. */
  inMonth: boolean;
  entries: CalendarEntry[];
  /** The composer for a post at this day (09:00, or the next full hour today), while it has not passed. */
  compose: string | undefined;
}

export interface CalendarHour {
  /** `HH:00`. */
  time: string;
  /** One cell per day of the week, with the posts due in that hour. */
  cells: { date: string; entries: CalendarEntry[]; compose: string | undefined }[];
}

export interface CalendarLayout {
  view: CalendarView;
  zone: string;
  /** The day the view is built around, `YYYY-MM-DD`. */
  anchor: string;
  title: string;
  /** The instants the view covers, `[start, end)`. */
  start: Date;
  end: Date;
  previous: string;
  next: string;
  days: CalendarDay[];
  /** The week view's rows: the hours of the day. */
  hours: CalendarHour[];
  /** The month view's rows: its weeks. */
  weeks: CalendarDay[][];
  /** The hour the week view opens at: the hour before now this week, else the working day's start. */
  startHour: number;
}

const MONTH_GRID_DAYS = 42;
/** Where the working day starts: the week view opens there, and a day's new post is due then. */
const WORKING_HOUR = 9;
const MOVABLE: readonly PostStatus[] = ['draft', 'scheduled', 'failed'];

/** The day a view is built around: `date` of the address when it is one, else today in the zone. */
export function anchorDay(date: unknown, zone: string, now: Date): DateTime {
  if (typeof date === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(date)) {
    const day = DateTime.fromISO(date, { zone });
    if (day.isValid && day.year >= 1970 && day.year <= 9998) return day.startOf('day');
  }
  return DateTime.fromJSDate(now, { zone }).startOf('day');
}

/**
 * What a view covers: a week from Monday, or the six weeks from the Monday on or before the 1st (every
 * month fits, with days of its neighbours).
 */
export function calendarRange(view: CalendarView, anchor: DateTime): { start: DateTime; end: DateTime } {
  if (view === 'week') {
    const start = anchor.startOf('week');
    return { start, end: start.plus({ days: 7 }) };
  }
  const start = anchor.startOf('month').startOf('week');
  return { start, end: start.plus({ days: MONTH_GRID_DAYS }) };
}

/** Lays out the posts of a view's range in days, and for the week view in hours, in the reader's zone. */
export function layOutCalendar(view: CalendarView, anchor: DateTime, posts: CalendarPost[], now: Date): CalendarLayout {
  const zone = anchor.zoneName ?? 'UTC';
  const { start, end } = calendarRange(view, anchor);
  const local = DateTime.fromJSDate(now, { zone });
  const today = local.toISODate()!;
  // A slot still wholly ahead takes a new post (a time that has passed would be refused); a day, at the
  // working day's start or, today, the next full hour.
  const composeAt = (date: string, hour: number | undefined): string | undefined => {
    if (date < today) return undefined;
    if (hour === undefined) {
      const at = date === today ? Math.max(WORKING_HOUR, local.hour + 1) : WORKING_HOUR;
      return at > 23 ? undefined : composeLink(date, at);
    }
    return date === today && hour <= local.hour ? undefined : composeLink(date, hour);
  };
  const entries = posts.map((post): CalendarEntry => {
    const local = DateTime.fromJSDate(post.scheduledAt, { zone });
    return { ...post, time: local.toFormat('HH:mm'), date: local.toISODate()!, movable: MOVABLE.includes(post.status) };
  });
  const count = view === 'week' ? 7 : MONTH_GRID_DAYS;
  const days: CalendarDay[] = Array.from({ length: count }, (_, i) => {
    const day = start.plus({ days: i });
    const date = day.toISODate()!;
    return {
      date,
      label: day.toFormat('ccc d LLL'),
      weekday: day.toFormat('ccc'),
      number: day.day,
      today: date === today,
      inMonth: view === 'week' || day.month === anchor.month,
      entries: entries.filter((entry) => entry.date === date),
      compose: composeAt(date, undefined),
    };
  });
  const hours: CalendarHour[] =
    view === 'week'
      ? Array.from({ length: 24 }, (_, hour) => {
          const time = `${String(hour).padStart(2, '0')}:00`;
          return {
            time,
            cells: days.map((day) => ({
              date: day.date,
              entries: day.entries.filter((entry) => entry.time.slice(0, 2) === time.slice(0, 2)),
              compose: composeAt(day.date, hour),
            })),
          };
        })
      : [];
  const weeks =
    view === 'month' ? Array.from({ length: MONTH_GRID_DAYS / 7 }, (_, w) => days.slice(w * 7, w * 7 + 7)) : [];
  const step = view === 'week' ? { weeks: 1 } : { months: 1 };
  return {
    view,
    zone,
    anchor: anchor.toISODate()!,
    title: view === 'week' ? weekTitle(start, end.minus({ days: 1 })) : anchor.toFormat('LLLL yyyy'),
    start: start.toJSDate(),
    end: end.toJSDate(),
    previous: anchor.minus(step).toISODate()!,
    next: anchor.plus(step).toISODate()!,
    days,
    hours,
    weeks,
    startHour: days.some((day) => day.today) ? Math.max(local.hour - 1, 0) : WORKING_HOUR - 1,
  };
}

function composeLink(date: string, hour: number): string {
  return `/compose?${new URLSearchParams({ date, time: `${String(hour).padStart(2, '0')}:00` }).toString()}`;
}

function weekTitle(first: DateTime, last: DateTime): string {
  if (first.year !== last.year) return `${first.toFormat('d LLL yyyy')} – ${last.toFormat('d LLL yyyy')}`;
  if (first.month !== last.month) return `${first.toFormat('d LLL')} – ${last.toFormat('d LLL yyyy')}`;
  return `${first.toFormat('d')} – ${last.toFormat('d LLL yyyy')}`;
}

/**
 * The instant a user means by a day and a time on the wall clock of their zone: `undefined` when
 * either is missing or not one. A time that the zone skips (a DST change) is read as the hour after.
 */
export function wallClockInstant(date: string, time: string, zone: string): Date | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date) || !/^\d{2}:\d{2}$/.test(time)) return undefined;
  const instant = DateTime.fromISO(`${date}T${time}`, { zone });
  return instant.isValid ? instant.toJSDate() : undefined;
}
