import { randomUUID } from 'node:crypto';

/** Nobody answered the questions within the wait's time limit. */
export class AskUserQuestionsTimeoutError extends Error {
  override readonly name = 'AskUserQuestionsTimeoutError';
  constructor(
    readonly requestId: string,
    readonly timeoutMs: number,
  ) {
    super(`No answer to the questions within ${timeoutMs} ms`);
  }
}

/** The questions were withdrawn before they were answered (run cancelled, no client, …). */
export class AskUserQuestionsCancelledError extends Error {
  override readonly name = 'AskUserQuestionsCancelledError';
  constructor(
    readonly requestId: string,
    readonly reason: string,
  ) {
    super(`The questions were cancelled: ${reason}`);
  }
}

/** `wait` was called with an id that is not registered (never was, or already waited for). */
export class UnknownAskUserQuestionsRequestError extends Error {
  override readonly name = 'UnknownAskUserQuestionsRequestError';
  constructor(readonly requestId: string) {
    super(`Unknown ask_user_questions request: ${requestId}`);
  }
}

export interface AskUserQuestionsRegistryOptions {
  /** Request id generator (default `crypto.randomUUID`). */
  newId?: () => string;
}

interface Entry {
  sessionId: number;
  promise: Promise<unknown>;
  resolve: (answers: unknown) => void;
  reject: (error: Error) => void;
  /** Answered or cancelled; the outcome stays in `promise` until someone waits for it. */
  settled: boolean;
  waiting: boolean;
  timer: NodeJS.Timeout | null;
}

/**
 * `ask_user_questions` calls waiting for the user's answers. `register` creates the request before
 * the questions are sent, so an answer that arrives before `wait` is kept rather than lost;
 * `wait` starts the time limit. An entry is removed once it has been both settled and waited for,
 * or on time-out.
 */
export class AskUserQuestionsRegistry {
  private readonly newId: () => string;
  private readonly entries = new Map<string, Entry>();

  constructor(options: AskUserQuestionsRegistryOptions = {}) {
    this.newId = options.newId ?? randomUUID;
  }

  /** Opens a request for the session and returns its new id. */
  register(sessionId: number): string {
    const requestId = this.newId();
    let resolve!: (answers: unknown) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<unknown>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // A request cancelled before anyone waits must not surface as an unhandled rejection.
    promise.catch(() => undefined);
    this.entries.set(requestId, { sessionId, promise, resolve, reject, settled: false, waiting: false, timer: null });
    return requestId;
  }

  /**
   * Resolves with the answers, or rejects with `AskUserQuestionsTimeoutError` after `timeoutMs`,
   * `AskUserQuestionsCancelledError` on `cancel`, or `UnknownAskUserQuestionsRequestError`.
   * Waiting again on a request already waited for returns the same promise and keeps the first
   * time limit.
   */
  wait(requestId: string, timeoutMs: number): Promise<unknown> {
    const entry = this.entries.get(requestId);
    if (!entry) return Promise.reject(new UnknownAskUserQuestionsRequestError(requestId));
    if (entry.waiting) return entry.promise;
    entry.waiting = true;
    if (entry.settled) {
      this.entries.delete(requestId);
      return entry.promise;
    }
    entry.timer = setTimeout(() => {
      this.settle(requestId, entry, () => entry.reject(new AskUserQuestionsTimeoutError(requestId, timeoutMs)));
    }, timeoutMs);
    entry.timer.unref();
    return entry.promise;
  }

  /** Delivers the answers; `false` if the request is unknown or already answered, cancelled or timed out. */
  complete(requestId: string, answers: unknown): boolean {
    const entry = this.entries.get(requestId);
    if (!entry || entry.settled) return false;
    this.settle(requestId, entry, () => entry.resolve(answers));
    return true;
  }

  /** Withdraws the questions; `false` if the request is unknown or already settled. */
  cancel(requestId: string, reason = 'cancelled'): boolean {
    const entry = this.entries.get(requestId);
    if (!entry || entry.settled) return false;
    this.settle(requestId, entry, () => entry.reject(new AskUserQuestionsCancelledError(requestId, reason)));
    return true;
  }

  /** The session of a request still waiting for answers, or `undefined`. */
  sessionOf(requestId: string): number | undefined {
    const entry = this.entries.get(requestId);
    return entry && !entry.settled ? entry.sessionId : undefined;
  }

  /**
   * Cancels every unanswered request of the session and drops its answered ones nobody waited
   * for; returns the ids that were cancelled.
   */
  cancelSession(sessionId: number, reason = 'session cancelled'): string[] {
    const cancelled: string[] = [];
    for (const [requestId, entry] of this.entries) {
      if (entry.sessionId !== sessionId) continue;
      if (entry.settled) {
        this.entries.delete(requestId);
      } else if (this.cancel(requestId, reason)) {
        cancelled.push(requestId);
      }
    }
    return cancelled;
  }

  /** How many requests still wait for answers. */
  pendingCount(): number {
    let count = 0;
    for (const entry of this.entries.values()) if (!entry.settled) count++;
    return count;
  }

  private settle(requestId: string, entry: Entry, outcome: () => void): void {
    entry.settled = true;
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    // Without a waiter the outcome is kept for the `wait` that comes later.
    if (entry.waiting) this.entries.delete(requestId);
    outcome();
  }
}
