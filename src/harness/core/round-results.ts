/** Who waits for the result at one position of the round. */
interface Waiting<T> {
  position: number;
  resolve: (value: T | null) => void;
  reject: (error: unknown) => void;
}

/**
 * The results of one round's calls, filled as the calls finish (in any order) and read in call
 * order by the loop that applies them. Whatever the number of calls, the round holds at most one
 * waiting promise and one listener on the run's signal, made only when the loop has to wait.
 */
export class RoundResults<T> {
  /** `undefined`: no result yet. A result is an object, never `undefined`. */
  private readonly values: Array<T | undefined>;
  private readonly failures = new Map<number, unknown>();
  private waiting: Waiting<T> | null = null;
  private onAbort: (() => void) | null = null;

  constructor(
    count: number,
    private readonly signal: AbortSignal,
  ) {
    this.values = new Array<T | undefined>(count);
  }

  /** Records the result of the call at `position`. */
  set(position: number, value: T): void {
    this.values[position] = value;
    const waiting = this.waiting;
    if (waiting?.position !== position) return;
    this.waiting = null;
    waiting.resolve(value);
  }

  /** Records what `outcome` settles with, result or failure; the answer never rejects. */
  take(position: number, outcome: Promise<T>): Promise<void> {
    return outcome.then(
      (value) => this.set(position, value),
      (error: unknown) => this.fail(position, error),
    );
  }

  /**
   * The result of the call at `position`: the value itself when it is there (even after the run
   * was cancelled: a call that finished keeps its result), else a promise of it — which settles
   * with `null` if the run's signal fires first; `null` at once when it has fired. Throws (or the
   * promise rejects) with what the call's outcome failed with. One position is waited for at a
   * time.
   */
  at(position: number): T | null | Promise<T | null> {
    const value = this.values[position];
    if (value !== undefined) return value;
    if (this.failures.has(position)) throw this.failures.get(position);
    if (this.signal.aborted) return null;
    if (this.onAbort === null) {
      this.onAbort = () => {
        const waiting = this.waiting;
        this.waiting = null;
        waiting?.resolve(null);
      };
      this.signal.addEventListener('abort', this.onAbort, { once: true });
    }
    return new Promise<T | null>((resolve, reject) => (this.waiting = { position, resolve, reject }));
  }

  /** Fails every call that has no result yet with `error`: the round could not run them. */
  failRemaining(error: unknown): void {
    for (let position = 0; position < this.values.length; position++) {
      if (this.values[position] === undefined && !this.failures.has(position)) this.fail(position, error);
    }
  }

  /** The round is applied: drops the listener on the run's signal. */
  close(): void {
    if (this.onAbort === null) return;
    this.signal.removeEventListener('abort', this.onAbort);
    this.onAbort = null;
  }

  private fail(position: number, error: unknown): void {
    this.failures.set(position, error);
    const waiting = this.waiting;
    if (waiting?.position !== position) return;
    this.waiting = null;
    waiting.reject(error);
  }
}
