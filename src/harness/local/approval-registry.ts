/** A LOCAL tool request that waits for the user to approve it on the desktop. */
export interface PendingApproval {
  requestId: string;
  sessionId: number;
  toolName: string;
  /** Why approval was asked for, as shown to the user. */
  dangerReason: string | null;
  /** When the wait began (ms since the epoch). */
  createdAt: number;
}

export interface ApprovalRegistryOptions {
  /** Clock for `createdAt` (default `Date.now`). */
  now?: () => number;
}

/**
 * The LOCAL tool requests that need the user's approval and have not finished yet. It holds no
 * promises and decides nothing: the executor registers a request while it waits and resolves it
 * when the request ends, so that anyone can see what a session is blocked on.
 */
export class ApprovalRegistry {
  private readonly now: () => number;
  private readonly pending = new Map<string, PendingApproval>();

  constructor(options: ApprovalRegistryOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /** Starts tracking a request; registering the same id again replaces the entry. */
  register(requestId: string, approval: { sessionId: number; toolName: string; dangerReason: string | null }): void {
    this.pending.set(requestId, {
      requestId,
      sessionId: approval.sessionId,
      toolName: approval.toolName,
      dangerReason: approval.dangerReason,
      createdAt: this.now(),
    });
  }

  /** Stops tracking a request whatever its outcome; `false` if it was not tracked. */
  resolve(requestId: string): boolean {
    return this.pending.delete(requestId);
  }

  isPending(requestId: string): boolean {
    return this.pending.has(requestId);
  }

  /** The session's waiting approvals, oldest first (copies: changing them changes nothing here). */
  listPending(sessionId: number): PendingApproval[] {
    return [...this.pending.values()].filter((entry) => entry.sessionId === sessionId).map((entry) => ({ ...entry }));
  }

  /** Forgets every approval of the session; returns the request ids removed. */
  clearSession(sessionId: number): string[] {
    const removed: string[] = [];
    for (const [requestId, entry] of this.pending) {
      if (entry.sessionId !== sessionId) continue;
      this.pending.delete(requestId);
      removed.push(requestId);
    }
    return removed;
  }
}
