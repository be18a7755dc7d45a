/** The loop waiting for the next result of the round. */
interface Waiting<T> {
  resolve: (value: T | null) => void;
  reject: (error: unknown) => void;
}

/**
 * The results of one round's calls, filled as the calls finish (in any order) and read once each,
 * in call order, by the loop that applies them. Whatever the number of calls, the round holds at
 * most one waiting promise and one listener on the run's signal, made only when the loop has to
 * wait; a result read is let go (the loop keeps what it needs of it), so a long round does not
 * carry its results to its end twice.
 */
export class RoundResults<T> {
  /** `undefined`: no result yet, or read already. A result is an object, never `undefined`. */
  private readonly values: Array<T | undefined>;
  private readonly failures = new Map<number, unknown>();
  /** The position `next` reads. */
  private cursor = 0;
  private waiting: Waiting<T> | null = null;
  private onAbort: (() => void) | null = null;

  constructor(
    count: number,
    private readonly signal: AbortSignal,
  ) {
    this.values = new Array<T | undefined>(count);
  }

  /** Records the result of the call at `position` (nothing once that position was read). */
  set(position: number, value: T): void {
    if (position < this.cursor) return;
    if (position === this.cursor && this.waiting !== null) {
      this.wake().resolve(value);
      return;
    }
    this.values[position] = value;
  }

  /** Records what `outcome` settles with, result or failure; the answer never rejects. */
  take(position: number, outcome: Promise<T>): Promise<void> {
    return outcome.then(
      (value) => this.set(position, value),
      (error: unknown) => this.fail(position, error),
    );
  }

  /** Fails every call that has no result yet with `error`: the round could not run them. */
  failRemaining(error: unknown): void {
    for (let position = this.cursor; position < this.values.length; position++) {
      if (this.values[position] === undefined && !this.failures.has(position)) this.fail(position, error);
    }
  }

  /**
   * The result of the next call in call order: the value itself when it is there (even after the
   * run was cancelled: a call that finished keeps its result), else a promise of it — which
   * settles with `null` if the run's signal fires first; `null` at once when it has fired. Throws
   * (or the promise rejects) with what the call's outcome failed with.
   */
  next(): T | null | Promise<T | null> {
    const position = this.cursor;
    if (position >= this.values.length) throw new Error('every result of the round has been read');
    if (this.waiting !== null) throw new Error('the next result of the round is already awaited');
    const value = this.values[position];
    if (value !== undefined) {
      this.values[position] = undefined;
      this.cursor++;
      return value;
    }
    if (this.failures.has(position)) {
      const failure = this.failures.get(position);
      this.failures.delete(position);
      this.cursor++;
      throw failure;
    }
    if (this.signal.aborted) {
      this.cursor++;
      return null;
    }
    if (this.onAbort === null) {
      this.onAbort = () => {
        if (this.waiting !== null) this.wake().resolve(null);
      };
      this.signal.addEventListener('abort', this.onAbort, { once: true });
    }
    return new Promise<T | null>((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  /** The round is applied: drops the listener on the run's signal. */
  close(): void {
    if (this.onAbort === null) return;
    this.signal.removeEventListener('abort', this.onAbort);
    this.onAbort = null;
  }

  private fail(position: number, error: unknown): void {
    if (position < this.cursor) return;
    if (position === this.cursor && this.waiting !== null) {
      this.wake().reject(error);
      return;
    }
    this.failures.set(position, error);
  }

  /** The waiting loop, no longer waiting: its position is read. */
  private wake(): Waiting<T> {
    const waiting = this.waiting!;
    this.waiting = null;
    this.cursor++;
    return waiting;
  }
}
