import type { ToolConcurrency } from '../tool/tool-invocation';

/**
 * The order in which the calls of one round may run, as a readers–writer queue in call order:
 * a `shared` call (read-only) starts once every `exclusive` call before it has finished; an
 * `exclusive` call starts once every call before it has finished. So a read after an edit of
 * the same round sees the edit, two writes never race, and reads side by side still overlap.
 */
export class RoundSchedule {
  /** Settles when the last exclusive call (and so every call before it) has settled; `null` before the first. */
  private lastExclusive: Promise<void> | null = null;
  /** The shared calls added since the last exclusive one: the next exclusive call waits for them. */
  private sharedSince: Array<Promise<unknown>> = [];

  /**
   * Adds the next call of the round; `start` is called when its turn comes — at once when nothing
   * before it holds it back, so a round of shared calls starts them all in the same tick.
   *
   * What an exclusive call waits for is gathered only when one is added: a shared call costs one
   * promise, not a link in a chain of every call so far (a round can hold thousands).
   */
  add<T>(concurrency: ToolConcurrency, start: () => Promise<T>): Promise<T> {
    if (concurrency === 'shared') {
      const running = this.lastExclusive === null ? start() : this.lastExclusive.then(start);
      this.sharedSince.push(running);
      return running;
    }
    // The shared calls since the last exclusive one started after it settled, so once they have
    // all settled, so has every call before this one.
    const shared = this.sharedSince;
    this.sharedSince = [];
    const gate = shared.length > 0 ? Promise.all(shared.map(settledOf)) : this.lastExclusive;
    const running = gate === null ? start() : gate.then(start);
    this.lastExclusive = settledOf(running);
    return running;
  }
}

/** Settles, without a value, when `promise` does, whichever way. */
function settledOf(promise: Promise<unknown>): Promise<void> {
  return promise.then(
    () => undefined,
    () => undefined,
  );
}
