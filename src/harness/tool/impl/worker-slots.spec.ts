import fc from 'fast-check';

import { type ReleaseSlot, type SlotGroup, WorkerSlots } from './worker-slots';

/** Lets granted `acquire` promises deliver their release functions (no time passes). */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Whether `promise` has settled, after letting pending callbacks run. */
async function settled<T>(promise: Promise<T>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await flush();
  return done;
}

/**
 * Asks for slots and records who got one, in grant order: `label` names each call in the
 * expectations (`a1` is group `a`'s first call).
 */
class Recorder {
  readonly granted: string[] = [];
  private readonly releases = new Map<string, ReleaseSlot>();

  constructor(readonly slots: WorkerSlots) {}

  ask(label: string, group: SlotGroup, signal?: AbortSignal): Promise<ReleaseSlot> {
    const answer = this.slots.acquire({ group, signal });
    answer.then(
      (release) => {
        this.granted.push(label);
        this.releases.set(label, release);
      },
      () => undefined,
    );
    return answer;
  }

  /** Gives back the slot of `label` and lets the grants it causes arrive. */
  async release(label: string): Promise<void> {
    const release = this.releases.get(label);
    if (!release) throw new Error(`${label} holds no slot`);
    this.releases.delete(label);
    release();
    await flush();
  }
}

describe('WorkerSlots', () => {
  describe('with one group (callers that name none)', () => {
    it('grants at most `limit` slots, then the waiters in the order they asked', async () => {
      const slots = new WorkerSlots(2);
      const first = await slots.acquire();
      const second = await slots.acquire();
      const order: number[] = [];
      const waiting = [1, 2, 3].map((n) => slots.acquire().then((release) => (order.push(n), release)));
      expect(slots.inUse).toBe(2);
      expect(slots.waiting).toBe(3);
      expect(await settled(waiting[0])).toBe(false);
      first();
      const third = await waiting[0];
      second();
      (await waiting[1])();
      (await waiting[2])();
      third();
      expect(order).toEqual([1, 2, 3]);
      expect(slots.inUse).toBe(0);
      expect(slots.waiting).toBe(0);
    });

    it('frees a slot once, however often its release is called', async () => {
      const slots = new WorkerSlots(1);
      const release = await slots.acquire();
      const next = slots.acquire();
      const after = slots.acquire();
      release();
      release();
      await next;
      expect(slots.inUse).toBe(1);
      expect(await settled(after)).toBe(false);
      expect(slots.waiting).toBe(1);
    });

    it('drops a waiter whose signal aborts, taking no slot, and hands the slot to the next one', async () => {
      const slots = new WorkerSlots(1);
      const release = await slots.acquire();
      const leaving = new AbortController();
      const left = slots.acquire({ signal: leaving.signal });
      const next = slots.acquire();
      leaving.abort(new Error('deadline'));
      await expect(left).rejects.toThrow('deadline');
      expect(slots.waiting).toBe(1);
      release();
      (await next)();
      expect(slots.inUse).toBe(0);
      await expect(slots.acquire({ signal: leaving.signal })).rejects.toThrow('deadline');
      expect(slots.waiting).toBe(0);
    });

    it('grants waiters at once when the limit is raised, and holds back grants when it is lowered', async () => {
      const slots = new WorkerSlots(1);
      const release = await slots.acquire();
      const waiting = slots.acquire();
      slots.setLimit(2);
      const second = await waiting;
      slots.setLimit(1);
      release();
      const third = slots.acquire();
      expect(await settled(third)).toBe(false);
      second();
      (await third)();
      expect(slots.inUse).toBe(0);
    });

    it('takes no extra slot: extra slots are only for a group holding none', async () => {
      const recorder = new Recorder(new WorkerSlots(1, { extraLimit: 3 }));
      void recorder.ask('x1', null);
      void recorder.ask('x2', null);
      await flush();
      expect(recorder.granted).toEqual(['x1']);
    });

    it.each([0, -1, 1.5, Number.NaN])('refuses the limit %p', (limit) => {
      expect(() => new WorkerSlots(limit)).toThrow(RangeError);
      expect(() => new WorkerSlots(1).setLimit(limit)).toThrow(RangeError);
    });

    it.each([
      [{ perGroupLimit: 0 }],
      [{ perGroupLimit: 1.5 }],
      [{ extraLimit: -1 }],
      [{ extraLimit: 0.5 }],
    ])('refuses the limits %j', (limits) => {
      expect(() => new WorkerSlots(1, limits)).toThrow(RangeError);
      expect(() => new WorkerSlots(1).configure(limits)).toThrow(RangeError);
    });
  });

  describe('when groups share the slots', () => {
    it("caps each group, leaving free slots to other groups while the capped group's callers wait", async () => {
      const recorder = new Recorder(new WorkerSlots(2, { perGroupLimit: 1 }));
      for (const label of ['a1', 'a2', 'a3']) void recorder.ask(label, 'a');
      await flush();
      expect(recorder.granted).toEqual(['a1']);
      expect(recorder.slots.inUse).toBe(1);
      void recorder.ask('b1', 'b');
      await flush();
      expect(recorder.granted).toEqual(['a1', 'b1']);
      await recorder.release('a1');
      expect(recorder.granted).toEqual(['a1', 'b1', 'a2']);
      expect(recorder.slots.heldBy('a')).toBe(1);
      expect(recorder.slots.waitingIn('a')).toBe(1);
    });

    it('gives a freed slot to the group holding fewest, even if another group asked first', async () => {
      const recorder = new Recorder(new WorkerSlots(2));
      for (const label of ['a1', 'a2', 'a3', 'a4']) void recorder.ask(label, 'a');
      void recorder.ask('b1', 'b');
      await flush();
      expect(recorder.granted).toEqual(['a1', 'a2']);
      await recorder.release('a1');
      // a3 asked before b1, but group b holds nothing and a holds one.
      expect(recorder.granted).toEqual(['a1', 'a2', 'b1']);
      await recorder.release('a2');
      expect(recorder.granted).toEqual(['a1', 'a2', 'b1', 'a3']);
    });

    it('takes turns between groups (round-robin), first come first served within each', async () => {
      const recorder = new Recorder(new WorkerSlots(1));
      void recorder.ask('a1', 'a');
      await flush();
      for (const label of ['a2', 'a3', 'a4']) void recorder.ask(label, 'a');
      for (const label of ['b1', 'b2']) void recorder.ask(label, 'b');
      void recorder.ask('c1', 'c');
      // Each release lets the next caller in.
      for (let i = 0; i < 7; i++) await recorder.release(recorder.granted[i]);
      expect(recorder.granted).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    });

    it('among groups holding as many, serves the one served longest ago, then the one that asked first', async () => {
      const recorder = new Recorder(new WorkerSlots(1));
      void recorder.ask('a1', 'a');
      await flush();
      void recorder.ask('a2', 'a');
      void recorder.ask('c1', 'c');
      void recorder.ask('b1', 'b');
      await recorder.release('a1');
      // a2 asked first, but a was just served; c and b were not, and c asked before b.
      expect(recorder.granted).toEqual(['a1', 'c1']);
      await recorder.release('c1');
      expect(recorder.granted).toEqual(['a1', 'c1', 'b1']);
      await recorder.release('b1');
      expect(recorder.granted).toEqual(['a1', 'c1', 'b1', 'a2']);
    });

    it('starts a group holding none at once on an extra slot while other groups hold every regular one', async () => {
      const recorder = new Recorder(new WorkerSlots(2, { perGroupLimit: 2, extraLimit: 1 }));
      for (const label of ['a1', 'a2', 'a3']) void recorder.ask(label, 'a');
      await flush();
      expect(recorder.granted).toEqual(['a1', 'a2']);
      void recorder.ask('b1', 'b');
      await flush();
      expect(recorder.granted).toEqual(['a1', 'a2', 'b1']);
      expect(recorder.slots.inUse).toBe(3);
      // The ceiling (limit + extraLimit) is reached: c waits, and so do b's further callers.
      void recorder.ask('c1', 'c');
      void recorder.ask('b2', 'b');
      await flush();
      expect(recorder.granted).toHaveLength(3);
      // Still more than `limit` held: the freed slot may only go to a group holding none.
      await recorder.release('a1');
      expect(recorder.granted).toEqual(['a1', 'a2', 'b1', 'c1']);
      await recorder.release('c1');
      expect(recorder.granted).toEqual(['a1', 'a2', 'b1', 'c1']);
      // Back under `limit`: a (holding one) and b (holding one) may take regular slots again.
      await recorder.release('a2');
      expect(recorder.granted).toEqual(['a1', 'a2', 'b1', 'c1', 'a3']);
      expect(recorder.slots.inUse).toBe(2);
    });

    it('hands out waiting slots when the limits are raised', async () => {
      const recorder = new Recorder(new WorkerSlots(1, { perGroupLimit: 1 }));
      for (const label of ['a1', 'a2']) void recorder.ask(label, 'a');
      void recorder.ask('b1', 'b');
      await flush();
      expect(recorder.granted).toEqual(['a1']);
      recorder.slots.configure({ extraLimit: 1 });
      await flush();
      expect(recorder.granted).toEqual(['a1', 'b1']);
      recorder.slots.configure({ limit: 3, perGroupLimit: 2 });
      await flush();
      expect(recorder.granted).toEqual(['a1', 'b1', 'a2']);
    });

    it('forgets a group once it holds and waits for nothing', async () => {
      const slots = new WorkerSlots(1);
      const release = await slots.acquire({ group: 7 });
      const leaving = new AbortController();
      const left = slots.acquire({ group: 8, signal: leaving.signal });
      leaving.abort(new Error('gone'));
      await expect(left).rejects.toThrow('gone');
      release();
      expect(slots.heldBy(7)).toBe(0);
      expect(slots.waitingIn(8)).toBe(0);
      expect(slots.inUse).toBe(0);
      expect(slots.waiting).toBe(0);
    });
  });

  describe('under any sequence of asks, releases and aborts', () => {
    type Step = { kind: 'ask'; group: number } | { kind: 'release'; pick: number } | { kind: 'abort'; pick: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      fc.record({ kind: fc.constant('ask' as const), group: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('abort' as const), pick: fc.nat() }),
    );
    const limits = fc.record({
      limit: fc.integer({ min: 1, max: 4 }),
      perGroupLimit: fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }),
      extraLimit: fc.integer({ min: 0, max: 3 }),
    });

    it('never exceeds a limit, never leaves a slot idle that a waiter may take, and serves each group in order', async () => {
      await fc.assert(
        fc.asyncProperty(limits, fc.array(step, { maxLength: 40 }), async ({ limit, perGroupLimit, extraLimit }, steps) => {
          const slots = new WorkerSlots(limit, { perGroupLimit, extraLimit });
          const held: Array<{ group: number; release: ReleaseSlot }> = [];
          const waiting: Array<{ group: number; abort: AbortController; order: number }> = [];
          const asked = new Map<number, number[]>();
          const served = new Map<number, number[]>();
          let asks = 0;
          for (const next of steps) {
            if (next.kind === 'ask') {
              const abort = new AbortController();
              const order = asks++;
              const entry = { group: next.group, abort, order };
              waiting.push(entry);
              asked.set(next.group, [...(asked.get(next.group) ?? []), order]);
              slots.acquire({ group: next.group, signal: abort.signal }).then(
                (release) => {
                  waiting.splice(waiting.indexOf(entry), 1);
                  held.push({ group: next.group, release });
                  served.set(next.group, [...(served.get(next.group) ?? []), order]);
                },
                () => waiting.splice(waiting.indexOf(entry), 1),
              );
            } else if (next.kind === 'release' && held.length > 0) {
              held.splice(next.pick % held.length, 1)[0].release();
            } else if (next.kind === 'abort' && waiting.length > 0) {
              const entry = waiting[next.pick % waiting.length];
              entry.abort.abort(new Error('left'));
              asked.set(entry.group, (asked.get(entry.group) ?? []).filter((order) => order !== entry.order));
            }
            await flush();

            expect(slots.inUse).toBe(held.length);
            expect(slots.waiting).toBe(waiting.length);
            expect(slots.inUse).toBeLessThanOrEqual(limit + extraLimit);
            for (const group of [0, 1, 2, 3]) {
              const holds = slots.heldBy(group);
              if (perGroupLimit !== null) expect(holds).toBeLessThanOrEqual(perGroupLimit);
              if (slots.waitingIn(group) === 0) continue;
              // A waiter may take a slot in none of these cases, or it would have got it.
              const underCap = perGroupLimit === null || holds < perGroupLimit;
              const room = slots.inUse < limit || (holds === 0 && slots.inUse < limit + extraLimit);
              expect(underCap && room).toBe(false);
            }
          }
          // Within a group, slots went out in the order they were asked for.
          for (const [group, orders] of served) {
            expect(orders).toEqual((asked.get(group) ?? []).slice(0, orders.length));
          }
          for (const { abort } of waiting.slice()) abort.abort(new Error('done'));
          await flush();
          for (const { release } of held.splice(0)) release();
          expect(slots.inUse).toBe(0);
          expect(slots.waiting).toBe(0);
        }),
        { numRuns: 200 },
      );
    });
  });
});
