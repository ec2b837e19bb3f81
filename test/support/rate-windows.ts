import { eventually } from './eventually.js';

/** How much of the current window (of `seconds`, counted from the epoch) is left, in ms. */
const leftOfWindow = (seconds: number) => seconds * 1000 - (Date.now() % (seconds * 1000));

/**
 * Counting in fixed windows, a burst that straddles the end of one would rightly get more through:
 * in the last 10 seconds of a window (of `seconds`, counted from the epoch), waits for the next one
 * before a burst.
 */
export async function clearOfWindowEdge(seconds: number): Promise<void> {
  if (leftOfWindow(seconds) >= 10_000) return;
  await eventually(
    () => {
      if (leftOfWindow(seconds) < 10_000) throw new Error(`still in the last 10 s of a ${seconds} s window`);
    },
    { timeout: 11_000, interval: 200 },
  );
}
