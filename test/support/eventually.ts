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
  const timeout = options.timeout ?? TIMEOUTS.eventually;
  // The drills and benchmarks of scripts/ use this support outside Vitest, where vi.waitFor cannot
  // run (it needs a test runner's state): they wait the same way, by the same rules.
  if (!process.env.VITEST) return retryUntil(check, timeout, interval);
  return vi.waitFor(check, { timeout, interval });
}

/** vi.waitFor's rules without Vitest: each try gets the time left, and the last failure is thrown. */
async function retryUntil<T>(check: () => T | Promise<T>, timeout: number, interval: number): Promise<T> {
  // A wait is a duration: the monotonic timer, not the clock a test may move.
  const deadline = performance.now() + timeout;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`timed out after ${timeout} ms`)),
        Math.max(0, deadline - performance.now()),
      );
    });
    try {
      return await Promise.race([Promise.resolve().then(check), outOfTime]);
    } catch (error) {
      if (performance.now() >= deadline) throw error;
    } finally {
      clearTimeout(timer);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
