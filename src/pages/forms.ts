import { DateTime } from 'luxon';
import { ConflictError, UnprocessableError, ValidationError } from '../core/errors.js';

export type Attempt<T> =
  | { ok: true; value: T }
  /** `status`: the error's own, 400 for a field that is not valid, 409 or 422 for a rule. */
  | { ok: false; status: number; message: string; errors: Record<string, string> };

/**
 * Runs a domain action for a form. The domain's rule errors come back as field messages for the page
 * to show next to the fields; any other failure goes on to the error page.
 */
export async function attempt<T>(action: () => Promise<T>): Promise<Attempt<T>> {
  try {
    return { ok: true, value: await action() };
  } catch (error) {
    if (error instanceof ValidationError || error instanceof UnprocessableError || error instanceof ConflictError) {
      const errors: Record<string, string> = {};
      for (const detail of error.details ?? []) errors[detail.path] ??= detail.message;
      if (Object.keys(errors).length === 0) errors.form = error.message;
      return { ok: false, status: error.status, message: error.message, errors };
    }
    throw error;
  }
}

/**
 * Dates on the pages: in the reader's time zone, to the minute, with the zone's short name or offset
 * (`2030-03-20 10:00 GMT+1`, `2030-03-20 09:00 UTC`), so a time copied elsewhere still says which it is.
 */
export function formatTime(date: Date | null | undefined, zone: string, never = 'never'): string {
  if (!date) return never;
  return DateTime.fromJSDate(date, { zone }).setLocale('en-US').toFormat('yyyy-MM-dd HH:mm ZZZZ');
}
