import type { ToolConcurrency } from '../tool/tool-invocation';

/**
 * The order in which the calls of one round may run, as a readers–writer queue in call order:
 * a `shared` call (read-only) starts once every `exclusive` call before it has finished; an
 * `exclusive` call starts once every call before it has finished. So a read after an edit of
 * the same round sees the edit, two writes never race, and reads side by side still overlap.
 */
export class RoundSchedule {
  /** Settles when every call added so far has settled; `null` before the first. */
  private everyCall: Promise<void> | null = null;
  /** Settles when the last exclusive call (and so every call before it) has settled. */
  private lastExclusive: Promise<void> | null = null;

  /**
   * Adds the next call of the round; `start` is called when its turn comes — at once when nothing
   * before it holds it back, so a round of shared calls starts them all in the same tick.
   */
  add<T>(concurrency: ToolConcurrency, start: () => Promise<T>): Promise<T> {
    const gate = concurrency === 'shared' ? this.lastExclusive : this.everyCall;
    const running = gate === null ? start() : gate.then(start);
    const settled = running.then(
      () => undefined,
      () => undefined,
    );
    this.everyCall = this.everyCall === null ? settled : Promise.all([this.everyCall, settled]).then(() => undefined);
    if (concurrency === 'exclusive') this.lastExclusive = settled;
    return running;
  }
}
