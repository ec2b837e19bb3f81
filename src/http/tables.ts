import type { Timestamp } from '../db/columns.js';

/** A fixed window's count of one rate-limit bucket. */
export interface RateLimitWindowTable {
  bucket: string;
  window_start: Timestamp;
  count: number;
}

declare module '../db/schema.js' {
  // Adds this feature's tables to the database type (see src/db/schema.ts).
  interface Database {
    rate_limit_windows: RateLimitWindowTable;
  }
}
