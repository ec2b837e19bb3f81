import type { ColumnType } from 'kysely';

/** A timestamp column: read as a Date, written as a Date or an ISO string. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** Set once, when the row is written (the database's `now()` by default). */
export type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
/** `bigint` columns come back as strings from both drivers (PGlite is configured like pg). */
export type BigIntColumn = ColumnType<string, number | bigint | string, number | bigint | string>;
