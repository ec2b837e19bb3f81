/**
 * Counting in fixed windows, a burst that straddles the end of one would rightly get more through:
 * waits out the last seconds of a window (of `seconds`, counted from the epoch) before a burst.
 */
export async function clearOfWindowEdge(seconds: number): Promise<void> {
  const left = seconds * 1000 - (Date.now() % (seconds * 1000));
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 500));
}
