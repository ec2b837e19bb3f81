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

/** Dates on the pages: UTC, to the minute, the same for every reader. */
export function formatTime(date: Date | null | undefined, never = 'never'): string {
  if (!date) return never;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
