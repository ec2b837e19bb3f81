/**
 * Writes items together rather than one statement each: an item waits at most `delayMs` for others,
 * and at most `size` go in one write. `add` resolves once its item is written, or rejects with the
 * write's error, so a caller that needs its item stored (a webhook delivery's outcome, before its job
 * completes) waits for it, and one that does not (a job's completion) need not.
 */
export class MicroBatcher<T> {
  private waiting: { item: T; resolve: () => void; reject: (error: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly writing = new Set<Promise<void>>();

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly options: { size: number; delayMs: number },
  ) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.waiting.length >= this.options.size) this.writeWaiting();
      else this.timer ??= setTimeout(() => this.writeWaiting(), this.options.delayMs);
    });
  }

  /** Writes what is waiting now, and waits for every write under way to end (when stopping). */
  async flush(): Promise<void> {
    this.writeWaiting();
    await Promise.allSettled([...this.writing]);
  }

  private writeWaiting(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.waiting;
    if (batch.length === 0) return;
    this.waiting = [];
    const written = this.write(batch.map((entry) => entry.item)).then(
      () => batch.forEach((entry) => entry.resolve()),
      (error: unknown) => batch.forEach((entry) => entry.reject(error)),
    );
    this.writing.add(written);
    void written.finally(() => this.writing.delete(written));
  }
}
