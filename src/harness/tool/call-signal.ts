/**
 * One tool call's cancellation: it fires when the run's signal fires (with the run's reason) or
 * when the call's deadline passes (with a `TimeoutError`, as `AbortSignal.timeout` gives).
 *
 * Built for rounds of thousands of calls. `AbortSignal.any([run, AbortSignal.timeout(ms)])` costs
 * tens of microseconds a call on Node 20, and so does creating any `AbortSignal` (a controller's
 * `signal` is built when first read); and a listener per call on the run's one signal makes a
 * round of n calls cost n² (adding a listener to an `EventTarget` walks its list). So the run's
 * signal carries one listener however many calls are in flight, the deadlines of a dispatcher's
 * calls share one timer (`CallDeadlines`), and the call's own `AbortSignal` is only built when
 * something asks for it (a tool that reads `ToolCallContext.signal()`); it is then aborted exactly
 * when the call is, with the same reason.
 */
export class CallSignal {
  private controller: AbortController | undefined;
  private stopped: { reason: unknown } | undefined;
  private listener: ((reason: unknown) => void) | undefined;
  private open = true;
  /** When the call's deadline passes (`CallDeadlines`' clock); Infinity: it has none. */
  readonly deadline: number;

  /** Use `openCallSignal`. */
  constructor(
    private readonly run: AbortSignal | undefined,
    private readonly deadlines: CallDeadlines | null,
  ) {
    if (run?.aborted) {
      this.stopped = { reason: run.reason };
      this.deadline = Infinity;
      return;
    }
    if (run !== undefined) register(run, this);
    this.deadline = deadlines === null ? Infinity : deadlines.add(this);
  }

  /** The signal the tool reads; built on first use. */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.stopped !== undefined) this.controller.abort(this.stopped.reason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.stopped !== undefined;
  }

  /** Why the call was stopped; `undefined` while it was not. */
  get reason(): unknown {
    return this.stopped?.reason;
  }

  /** Calls `listener` with the reason when the call is stopped (at once if it was). One listener. */
  onAbort(listener: (reason: unknown) => void): void {
    if (this.stopped !== undefined) listener(this.stopped.reason);
    else this.listener = listener;
  }

  /** The call is over: stops its deadline and forgets it on the run's signal. Idempotent. */
  close(): void {
    if (!this.open) return;
    this.open = false;
    this.listener = undefined;
    this.deadlines?.remove(this);
    if (this.run !== undefined) unregister(this.run, this);
  }

  /** Stops the call, once: its signal (if built) fires, then its listener. */
  abort(reason: unknown): void {
    if (this.stopped !== undefined || !this.open) return;
    this.stopped = { reason };
    this.controller?.abort(reason);
    const listener = this.listener;
    this.listener = undefined;
    listener?.(reason);
  }
}

/**
 * The deadlines of calls that all get the same time (a dispatcher's `callTimeoutMs`): they pass
 * in the order the calls began, so one timer, set for the oldest, serves them all — a timer per
 * call costs an allocation and an async resource each, which a round of thousands of calls
 * feels. Like `AbortSignal.timeout`'s, the timer does not keep the process alive.
 */
export class CallDeadlines {
  /** Calls with a pending deadline, oldest first (a `Set` keeps insertion order). */
  private readonly pending = new Set<CallSignal>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly timeoutMs: number,
    /** Milliseconds from any origin (default `performance.now`). */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How many calls wait for their deadline. */
  get size(): number {
    return this.pending.size;
  }

  /** Starts the call's deadline; returns when it passes. */
  add(call: CallSignal): number {
    const deadline = this.now() + this.timeoutMs;
    this.pending.add(call);
    if (this.timer === undefined) this.arm(this.timeoutMs);
    return deadline;
  }

  /** Forgets the call's deadline; the timer stops with the last one. */
  remove(call: CallSignal): void {
    if (!this.pending.delete(call) || this.pending.size > 0 || this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(ms: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.expire(), ms);
    this.timer.unref();
  }

  /** Stops every call whose deadline has passed, then waits for the next one. */
  private expire(): void {
    this.timer = undefined;
    const now = this.now();
    for (const call of this.pending) {
      if (call.deadline > now) {
        // Timers fire on a millisecond clock: never early, at most a millisecond late.
        this.arm(Math.max(1, Math.ceil(call.deadline - now)));
        return;
      }
      this.pending.delete(call);
      call.abort(timeoutReason());
    }
  }
}

/**
 * The cancellation of one call of a run (`run`, when it can be cancelled) with a deadline from
 * `deadlines` (null: none); `undefined` when there is neither, and the call cannot be stopped.
 * The caller must `close()` it once the call is over.
 */
export function openCallSignal(run: AbortSignal | undefined, deadlines: CallDeadlines | null): CallSignal | undefined {
  return run === undefined && deadlines === null ? undefined : new CallSignal(run, deadlines);
}

/** How many open calls are registered on a run's signal (0 once they are all closed). */
export function openCallCount(run: AbortSignal): number {
  return callsByRun.get(run)?.calls.size ?? 0;
}

/** The calls in flight on one run's signal, and the one listener that stops them all. */
interface RunCalls {
  calls: Set<CallSignal>;
  onAbort: () => void;
}

const callsByRun = new WeakMap<AbortSignal, RunCalls>();

/** The reason a call's deadline gives, as `AbortSignal.timeout` words it. */
function timeoutReason(): DOMException {
  return new DOMException('The operation was aborted due to timeout', 'TimeoutError');
}

function register(run: AbortSignal, call: CallSignal): void {
  const known = callsByRun.get(run);
  if (known !== undefined) {
    known.calls.add(call);
    return;
  }
  const entry: RunCalls = {
    calls: new Set([call]),
    onAbort: () => {
      callsByRun.delete(run);
      const calls = [...entry.calls];
      entry.calls.clear();
      for (const each of calls) each.abort(run.reason);
    },
  };
  callsByRun.set(run, entry);
  run.addEventListener('abort', entry.onAbort, { once: true });
}

function unregister(run: AbortSignal, call: CallSignal): void {
  const entry = callsByRun.get(run);
  if (entry === undefined || !entry.calls.delete(call) || entry.calls.size > 0) return;
  callsByRun.delete(run);
  run.removeEventListener('abort', entry.onAbort);
}
