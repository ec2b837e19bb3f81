import { vi } from 'vitest';
import { TIMEOUTS } from './timeouts.js';

export interface EventuallyOptions {
  /** How long to keep trying, in ms: TIMEOUTS.eventually by default. */
  timeout?: number;
  /** The pause between two tries, in ms (at most 200). */
  interval?: number;
}

/**
 * Runs `check` until it returns without throwing, and gives what it returned: for what the service
 * does by itself soon (a job, a delivery, a process starting). When time runs out, the last error of
 * `check` is the test's failure, so it reads as the assertion that did not come true.
 */
export function eventually<T>(check: () => T | Promise<T>, options: EventuallyOptions = {}): Promise<T> {
  const interval = Math.min(options.interval ?? 50, 200);
  return vi.waitFor(check, { timeout: options.timeout ?? TIMEOUTS.eventually, interval });
}
