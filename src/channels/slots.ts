import type { components } from '../../generated/public-v1.js';
import { DateTime } from 'luxon';
import type { Db } from '../db/database.js';

export type ScheduleSlotBody = components['schemas']['ScheduleSlot'];
type Weekday = ScheduleSlotBody['weekday'];

/** The contract's weekdays in ISO order: index + 1 is the ISO weekday (1 = Monday), as luxon numbers them. */
export const WEEKDAYS = [
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
  'sunday',
] as const satisfies readonly Weekday[];

/** A weekly slot as stored: the ISO weekday and the minute of the local day. */
export interface Slot {
  weekday: number;
  minute: number;
}

/** How far ahead a slot is looked for: beyond it, a queue has no room. */
export const QUEUE_HORIZON_DAYS = 366;

export function toSlot(body: ScheduleSlotBody): Slot {
  const [hours, minutes] = body.time.split(':').map(Number);
  return { weekday: WEEKDAYS.indexOf(body.weekday) + 1, minute: hours! * 60 + minutes! };
}

export function toSlotBody(slot: Slot): ScheduleSlotBody {
  const time = `${String(Math.floor(slot.minute / 60)).padStart(2, '0')}:${String(slot.minute % 60).padStart(2, '0')}`;
  return { weekday: WEEKDAYS[slot.weekday - 1]!, time };
}

/** The same slot twice counts once; ordered by weekday (Monday first) and time. */
export function normalSlots(slots: Slot[]): Slot[] {
  const unique = new Map(slots.map((slot) => [slot.weekday * 1440 + slot.minute, slot]));
  return [...unique.entries()].sort(([a], [b]) => a - b).map(([, slot]) => slot);
}

/**
 * The instants of the weekly slots strictly after `after`, in order, up to `until`, read in `zone`. A
 * local time the clocks skip that day (a daylight-saving gap) is taken as luxon makes it, an hour
 * later; a local time that occurs twice (the hour repeated in autumn) is its first occurrence. Two
 * slots that fall on one instant that way make one.
 */
export function* slotInstants(slots: Slot[], zone: string, after: Date, until: Date): Generator<Date> {
  if (slots.length === 0) return;
  const byWeekday = new Map<number, number[]>();
  for (const { weekday, minute } of slots) byWeekday.set(weekday, [...(byWeekday.get(weekday) ?? []), minute]);
  let day = DateTime.fromJSDate(after, { zone }).startOf('day');
  let last = after.getTime();
  for (;;) {
    const instants = (byWeekday.get(day.weekday) ?? [])
      .map((minute) =>
        DateTime.fromObject(
          { year: day.year, month: day.month, day: day.day, hour: Math.floor(minute / 60), minute: minute % 60 },
          { zone },
        ).toMillis(),
      )
      .sort((a, b) => a - b);
    for (const instant of instants) {
      if (instant > until.getTime()) return;
      if (instant <= last) continue;
      last = instant;
      yield new Date(instant);
    }
    day = day.plus({ days: 1 });
    if (day.toMillis() > until.getTime()) return;
  }
}

export async function readSlots(db: Db, channelId: string): Promise<Slot[]> {
  const rows = await db
    .selectFrom('channel_slots')
    .select(['weekday', 'minute'])
    .where('channel_id', '=', channelId)
    .orderBy('weekday')
    .orderBy('minute')
    .execute();
  return rows.map((row) => ({ weekday: Number(row.weekday), minute: Number(row.minute) }));
}

/** The channels among `channelIds` that have at least one slot. */
export async function channelsWithSlots(db: Db, channelIds: string[]): Promise<Set<string>> {
  if (channelIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('channel_slots')
    .select('channel_id')
    .distinct()
    .where('channel_id', 'in', channelIds)
    .execute();
  return new Set(rows.map((row) => row.channel_id));
}

/** Replaces every slot of the channel; call it with the channel locked. */
export async function writeSlots(trx: Db, channelId: string, slots: Slot[]): Promise<void> {
  await trx.deleteFrom('channel_slots').where('channel_id', '=', channelId).execute();
  if (slots.length > 0) {
    await trx
      .insertInto('channel_slots')
      .values(slots.map((slot) => ({ channel_id: channelId, ...slot })))
      .execute();
  }
}
