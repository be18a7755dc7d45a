/** How many cancelled runs are remembered by default. */
export const DEFAULT_CANCELLED_RUNS_CAPACITY = 10_000;

/**
 * Runs that were cancelled, with the reason, so that a call of a cancelled run still being
 * prepared is refused rather than started. Only a run's calls still in flight can use an entry,
 * so the oldest are forgotten past the capacity.
 */
export class CancelledRuns {
  /** Oldest first. */
  private readonly reasons = new Map<string, string>();

  constructor(private readonly capacity = DEFAULT_CANCELLED_RUNS_CAPACITY) {}

  /** Remembers the run as cancelled (again: as the newest). */
  add(executionId: string, reason: string): void {
    this.reasons.delete(executionId);
    this.reasons.set(executionId, reason);
    if (this.reasons.size > this.capacity) this.reasons.delete(this.reasons.keys().next().value as string);
  }

  /** Why the run was cancelled, or `undefined` if it was not (or is no longer remembered). */
  reasonFor(executionId: string): string | undefined {
    return this.reasons.get(executionId);
  }
}
