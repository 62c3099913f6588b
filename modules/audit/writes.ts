/**
 * The audit writes under way. The recorder writes after the answer, so a clean stop waits for these
 * (bounded) before it closes the database: nothing answered goes unrecorded (app.ts `stop`).
 */
export class AuditWrites {
  private pending = new Set<Promise<void>>();

  /**
   * Counts a write from now on, before it starts (the recorder begins one as a request arrives: its
   * after-response hook may run only once the answer is out, even after HTTP stopped); `finish` hands
   * it the write itself, whose failure is the writer's to report.
   */
  begin(): (write: Promise<unknown>) => void {
    const { promise, resolve } = Promise.withResolvers<void>();
    const done = promise.then(() => {
      this.pending.delete(done);
    });
    this.pending.add(done);
    return (write) =>
      void write.then(
        () => resolve(),
        () => resolve(),
      );
  }

  /** Waits until no write is under way (those begun meanwhile too), at most `timeoutMs`; false if some still were. */
  async settled(timeoutMs = 5_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.pending.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.all(this.pending),
        new Promise((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
    }
    return true;
  }
}
