/**
 * The contract's `format: date-time`, as this API accepts it: an RFC 3339 date-time that names one
 * real instant. The validator's own check is a pattern that lets through 30 February, hour 29 and
 * leap seconds; JavaScript turns the first into 2 March and the others into an invalid date. Like
 * that pattern, an offset without its colon (`+0100`) is tolerated when JavaScript reads it.
 */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2})(?::?(\d{2}))?)$/;

// Beyond year 9999 a response would write `+010000-…`, which is no RFC 3339 date-time. Before 1970
// nothing can be scheduled anyway, and early years do not survive storage: PostgreSQL has no year 0,
// and PGlite reads years 1 to 99 back through JavaScript's legacy date parser as 1950 to 2049.
export const EARLIEST_INSTANT = new Date('1970-01-01T00:00:00.000Z').getTime();
export const LATEST_INSTANT = new Date('9999-12-31T23:59:59.999Z').getTime();

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Whether `text` is a calendar-valid RFC 3339 date-time (no leap second, which JavaScript dates
 * cannot represent) whose instant lies between 1970-01-01 and 9999-12-31 in UTC.
 */
export function isInstant(text: string): boolean {
  const match = DATE_TIME.exec(text);
  if (!match) return false;
  const [year, month, day, hour, minute, second, offsetHours = 0, offsetMinutes = 0] = match
    .slice(1)
    .map((part) => Number(part ?? 0));
  if (month! < 1 || month! > 12 || day! < 1 || day! > daysInMonth(year!, month!)) return false;
  if (hour! > 23 || minute! > 59 || second! > 59 || offsetHours > 23 || offsetMinutes > 59) return false;
  // Parsed as the handlers will parse it: what is accepted here is a valid date there.
  const instant = Date.parse(text);
  return instant >= EARLIEST_INSTANT && instant <= LATEST_INSTANT;
}
