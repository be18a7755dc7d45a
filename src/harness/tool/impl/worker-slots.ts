/** Gives back a slot taken with `WorkerSlots.acquire`; calling it again does nothing. */
export type ReleaseSlot = () => void;

/** One `acquire` call that has not been granted a slot yet. */
interface Waiter {
  grant(release: ReleaseSlot): void;
}

/**
 * A counting semaphore with a FIFO queue: at most `limit` slots are held at once, and callers
 * asking while all are held wait, in the order they asked, until one is given back. A waiter can
 * leave the queue through its `AbortSignal`; it then takes no slot and leaves nothing behind.
 * Uses no timers, so an idle instance keeps no resource alive.
 */
export class WorkerSlots {
  private held = 0;
  /** Waiters in the order they asked (a `Set` keeps insertion order and deletes in O(1)). */
  private readonly waiters = new Set<Waiter>();
  private currentLimit: number;

  constructor(limit: number) {
    this.currentLimit = checkedLimit(limit);
  }

  /** Most slots held at once. */
  get limit(): number {
    return this.currentLimit;
  }

  /** How many slots are held right now. */
  get inUse(): number {
    return this.held;
  }

  /** How many `acquire` calls are waiting for a slot. */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Changes the limit (a whole number, at least 1). A higher limit grants waiting callers at once;
   * a lower one takes no slot away, it only holds back new grants until enough were given back.
   */
  setLimit(limit: number): void {
    this.currentLimit = checkedLimit(limit);
    this.grantWaiting();
  }

  /**
   * Resolves with the function that gives the slot back, once a slot is free and every earlier
   * caller has got one. Rejects with the signal's reason if `signal` aborts first; the caller then
   * no longer waits and holds nothing. A signal that aborts after the grant has no effect: the
   * caller holds the slot and must release it.
   */
  acquire(signal?: AbortSignal): Promise<ReleaseSlot> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<ReleaseSlot>((resolve, reject) => {
      const onAbort = () => {
        this.waiters.delete(waiter);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
      this.grantWaiting();
    });
  }

  /** Hands free slots to the waiters, first come first served. */
  private grantWaiting(): void {
    for (const waiter of this.waiters) {
      if (this.held >= this.currentLimit) return;
      this.waiters.delete(waiter);
      this.held++;
      waiter.grant(this.releaser());
    }
  }

  /** The release function of one granted slot: the first call frees it, later calls do nothing. */
  private releaser(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      this.grantWaiting();
    };
  }
}

function checkedLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`the slot limit must be a whole number of at least 1, got ${limit}`);
  return limit;
}
