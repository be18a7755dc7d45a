/** Gives back a slot taken with `WorkerSlots.acquire`; calling it again does nothing. */
export type ReleaseSlot = () => void;

/**
 * Whom a slot is for. Slots are shared out fairly between groups (grep uses the session id); all
 * callers that name no group (`null`, tools run outside a session) form one group.
 */
export type SlotGroup = number | string | null;

/** How many slots `WorkerSlots` hands out. */
export interface WorkerSlotLimits {
  /** Slots held at once by all groups together, extra slots aside (a whole number, at least 1). */
  limit: number;
  /** Most slots one group holds at once (a whole number, at least 1); `null`: no cap but `limit`. */
  perGroupLimit: number | null;
  /**
   * Slots beyond `limit` that only a group holding none may take (a whole number, 0 or more), so
   * that it need not wait behind others' long work. `limit + extraLimit` slots are never exceeded.
   */
  extraLimit: number;
}

/** What `WorkerSlots.acquire` is asked with. */
export interface AcquireOptions {
  /** The group the slot counts against (default `null`, the group of callers outside a session). */
  group?: SlotGroup;
  /** Leaves the queue when it aborts; the caller then holds nothing. */
  signal?: AbortSignal;
}

/** One `acquire` call that has not been granted a slot yet. */
interface Waiter {
  /** Order of arrival, across all groups. */
  readonly arrival: number;
  grant(release: ReleaseSlot): void;
}

/** The slots a group holds and its waiters in the order they asked (a `Set` keeps insertion order, deletes in O(1)). */
interface GroupState {
  held: number;
  readonly waiters: Set<Waiter>;
  /** When the group was last granted a slot (a count of grants); `-1`: not since it was last idle. */
  lastGrant: number;
}

/**
 * A counting semaphore that shares its slots fairly between groups of callers (grep's matching
 * threads between sessions), so that one group's long work cannot hold another's back.
 *
 * Rules, checked each time a slot is freed or asked for:
 * - **Cap per group.** A group holds at most `perGroupLimit` slots; its further callers wait
 *   even while slots are free, which leaves those slots to other groups.
 * - **Fair order.** A free slot goes to the waiting group that holds the fewest slots; among
 *   equals, to the one served longest ago (a group that has been idle counts as never served),
 *   then to the one whose first waiter asked earliest. Within a group, first come first served.
 *   So groups take turns (round-robin) instead of the one that queued most work going first.
 * - **Room for newcomers.** A group holding no slot may take one of `extraLimit` slots beyond
 *   `limit` when the regular ones are all held. However long the work holding the pool, a group
 *   with nothing running starts at once as long as fewer than `limit + extraLimit` slots are held
 *   in all, which is the hard ceiling. Past it, it waits, first in line among those holding none.
 * The extra slots are not set aside: a slot is extra only by count, and while more than `limit`
 * are held, a freed slot goes only to a group holding none.
 *
 * A waiter can leave its queue through its `AbortSignal`; it then takes no slot and leaves
 * nothing behind. Group records last only while the group holds or waits for a slot. Uses no
 * timers, so an idle instance keeps no resource alive, and its decisions depend only on the order
 * of calls: tests drive it without waiting.
 */
export class WorkerSlots {
  private held = 0;
  private arrivals = 0;
  private grants = 0;
  private readonly groups = new Map<SlotGroup, GroupState>();
  private limits: WorkerSlotLimits;

  constructor(limit: number, options: { perGroupLimit?: number | null; extraLimit?: number } = {}) {
    this.limits = checkedLimits({ limit, perGroupLimit: options.perGroupLimit ?? null, extraLimit: options.extraLimit ?? 0 });
  }

  /** Regular slots held at once (`WorkerSlotLimits.limit`). */
  get limit(): number {
    return this.limits.limit;
  }

  /** The limits in force. */
  get settings(): WorkerSlotLimits {
    return { ...this.limits };
  }

  /** How many slots are held right now, extra ones included. */
  get inUse(): number {
    return this.held;
  }

  /** How many `acquire` calls are waiting for a slot, in all groups. */
  get waiting(): number {
    let count = 0;
    for (const state of this.groups.values()) count += state.waiters.size;
    return count;
  }

  /** How many slots `group` holds right now. */
  heldBy(group: SlotGroup): number {
    return this.groups.get(group)?.held ?? 0;
  }

  /** How many `acquire` calls of `group` are waiting. */
  waitingIn(group: SlotGroup): number {
    return this.groups.get(group)?.waiters.size ?? 0;
  }

  /**
   * Changes the regular limit (a whole number, at least 1). A higher limit grants waiting callers
   * at once; a lower one takes no slot away, it only holds back new grants until enough were
   * given back.
   */
  setLimit(limit: number): void {
    this.configure({ limit });
  }

  /** Changes some of the limits, with the same effect on slots held and waiters as `setLimit`. */
  configure(limits: Partial<WorkerSlotLimits>): void {
    this.limits = checkedLimits({ ...this.limits, ...limits });
    this.grantWaiting();
  }

  /**
   * Resolves with the function that gives the slot back, once the rules above give this caller a
   * slot. Rejects with the signal's reason if `signal` aborts first; the caller then no longer
   * waits and holds nothing. A signal that aborts after the grant has no effect: the caller holds
   * the slot and must release it.
   */
  acquire(options: AcquireOptions = {}): Promise<ReleaseSlot> {
    const { group = null, signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<ReleaseSlot>((resolve, reject) => {
      const state = this.stateOf(group);
      const onAbort = () => {
        state.waiters.delete(waiter);
        this.forgetIfIdle(group, state);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        arrival: this.arrivals++,
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      state.waiters.add(waiter);
      this.grantWaiting();
    });
  }

  /** Hands out slots while some waiting group may take one, choosing by the rules above. */
  private grantWaiting(): void {
    for (;;) {
      let chosen: { group: SlotGroup; state: GroupState; first: Waiter } | null = null;
      for (const [group, state] of this.groups) {
        const first = firstOf(state.waiters);
        if (!first || !this.mayTake(state)) continue;
        if (!chosen || comesBefore(state, first, chosen.state, chosen.first)) chosen = { group, state, first };
      }
      if (!chosen) return;
      chosen.state.waiters.delete(chosen.first);
      chosen.state.held++;
      chosen.state.lastGrant = this.grants++;
      this.held++;
      chosen.first.grant(this.releaser(chosen.group, chosen.state));
    }
  }

  /** Whether a group in `state` may take a slot now: under its cap, and a regular slot free or an extra one for a group holding none. */
  private mayTake(state: GroupState): boolean {
    const { limit, perGroupLimit, extraLimit } = this.limits;
    if (perGroupLimit !== null && state.held >= perGroupLimit) return false;
    if (this.held < limit) return true;
    return state.held === 0 && this.held < limit + extraLimit;
  }

  /** The release function of one granted slot: the first call frees it, later calls do nothing. */
  private releaser(group: SlotGroup, state: GroupState): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      state.held--;
      this.held--;
      this.forgetIfIdle(group, state);
      this.grantWaiting();
    };
  }

  private stateOf(group: SlotGroup): GroupState {
    let state = this.groups.get(group);
    if (!state) {
      state = { held: 0, waiters: new Set(), lastGrant: -1 };
      this.groups.set(group, state);
    }
    return state;
  }

  /** Drops the record of a group that holds and waits for nothing, so that ended sessions leave nothing behind. */
  private forgetIfIdle(group: SlotGroup, state: GroupState): void {
    if (state.held === 0 && state.waiters.size === 0 && this.groups.get(group) === state) this.groups.delete(group);
  }
}

/** Whether group `a` (first waiter `aFirst`) is served before group `b`: fewest held, then served longest ago, then asked earliest. */
function comesBefore(a: GroupState, aFirst: Waiter, b: GroupState, bFirst: Waiter): boolean {
  if (a.held !== b.held) return a.held < b.held;
  if (a.lastGrant !== b.lastGrant) return a.lastGrant < b.lastGrant;
  return aFirst.arrival < bFirst.arrival;
}

function firstOf(waiters: Set<Waiter>): Waiter | undefined {
  for (const waiter of waiters) return waiter;
  return undefined;
}

function checkedLimits(limits: WorkerSlotLimits): WorkerSlotLimits {
  const { limit, perGroupLimit, extraLimit } = limits;
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`the slot limit must be a whole number of at least 1, got ${limit}`);
  if (perGroupLimit !== null && (!Number.isInteger(perGroupLimit) || perGroupLimit < 1)) {
    throw new RangeError(`the per-group slot limit must be a whole number of at least 1, got ${perGroupLimit}`);
  }
  if (!Number.isInteger(extraLimit) || extraLimit < 0) throw new RangeError(`the extra slot limit must be a whole number of 0 or more, got ${extraLimit}`);
  return { limit, perGroupLimit, extraLimit };
}
