import * as os from 'node:os';

import { RE2JS } from 're2js';

import { DEFAULT_GREP_WORKER_LIMIT, GrepLineMatcher, liveGrepWorkers, setGrepWorkerLimit, waitingGrepMatchers } from './grep-worker';
import { WorkerSlots } from './worker-slots';

/** A new matcher gets a slot and answers: nothing before it kept one. */
async function expectAFreshMatcherWorks(): Promise<void> {
  const next = new GrepLineMatcher('x', 0);
  try {
    expect(await next.matchingLines('x', 1)).toEqual([0]);
  } finally {
    await next.close();
  }
}

describe('GrepLineMatcher', () => {
  it('answers the indices of the matching lines, split on \\n or \\r\\n, at most `limit` of them', async () => {
    const matcher = new GrepLineMatcher('to+do', RE2JS.CASE_INSENSITIVE);
    try {
      const text = 'TODO one\r\nnone\ntoodo two\r\nx\ntodo three';
      expect(await matcher.matchingLines(text, 10)).toEqual([0, 2, 4]);
      expect(await matcher.matchingLines(text, 2)).toEqual([0, 2]);
      expect(await matcher.matchingLines('', 10)).toEqual([]);
    } finally {
      await matcher.close();
    }
    expect(liveGrepWorkers()).toBe(0);
  });

  it('starts no thread until the first request', async () => {
    const matcher = new GrepLineMatcher('x', 0);
    expect(liveGrepWorkers()).toBe(0);
    await matcher.close();
    await expect(matcher.matchingLines('x', 1)).rejects.toThrow('the grep matcher was closed');
    expect(liveGrepWorkers()).toBe(0);
  });

  it('rejects with the error the thread throws when it cannot compile the pattern', async () => {
    const matcher = new GrepLineMatcher('(unclosed', 0);
    await expect(matcher.matchingLines('x', 1)).rejects.toThrow(/missing closing \)/);
    await expect(matcher.matchingLines('x', 1)).rejects.toThrow(/missing closing \)/);
    await matcher.close();
    expect(liveGrepWorkers()).toBe(0);
  });

  it('rejects one request whose matching throws, and keeps answering the next', async () => {
    const matcher = new GrepLineMatcher('x', 0);
    try {
      await expect(matcher.matchingLines(42 as unknown as string, 1)).rejects.toThrow(/split is not a function/);
      expect(await matcher.matchingLines('a\nx', 1)).toEqual([1]);
    } finally {
      await matcher.close();
    }
  });

  it('rejects a pending request when closed, and the thread has exited once close resolves', async () => {
    const matcher = new GrepLineMatcher('(?:a?){1000}a{1000}[bc]', 0);
    const pending = matcher.matchingLines('a'.repeat(200_000), 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(liveGrepWorkers()).toBe(1);
    const rejected = expect(pending).rejects.toThrow('the grep matcher was closed');
    await matcher.close();
    await rejected;
    expect(liveGrepWorkers()).toBe(0);
  });
});

describe('WorkerSlots', () => {
  const settled = async <T>(promise: Promise<T>) => {
    let done = false;
    promise.then(
      () => (done = true),
      () => (done = true),
    );
    await new Promise((resolve) => setImmediate(resolve));
    return done;
  };

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
    const left = slots.acquire(leaving.signal);
    const next = slots.acquire();
    leaving.abort(new Error('deadline'));
    await expect(left).rejects.toThrow('deadline');
    expect(slots.waiting).toBe(1);
    release();
    (await next)();
    expect(slots.inUse).toBe(0);
    await expect(slots.acquire(leaving.signal)).rejects.toThrow('deadline');
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

  it.each([0, -1, 1.5, Number.NaN])('refuses the limit %p', (limit) => {
    expect(() => new WorkerSlots(limit)).toThrow(RangeError);
    expect(() => new WorkerSlots(1).setLimit(limit)).toThrow(RangeError);
  });
});

describe('GrepLineMatcher sharing the matching threads', () => {
  const slowPattern = '(?:a?){1000}a{1000}[bc]';
  let previousLimit: number;

  beforeEach(() => {
    previousLimit = setGrepWorkerLimit(1);
  });

  afterEach(() => {
    setGrepWorkerLimit(previousLimit);
  });

  it('defaults to one thread per available core', () => {
    expect(DEFAULT_GREP_WORKER_LIMIT).toBe(Math.max(1, os.availableParallelism()));
    expect(setGrepWorkerLimit(1)).toBe(1);
  });

  it('waits for a slot to start its thread, and starts it once the running one exits', async () => {
    const busy = new GrepLineMatcher(slowPattern, 0);
    const blocked = busy.matchingLines('a'.repeat(200_000), 1);
    const rejected = expect(blocked).rejects.toThrow('the grep matcher was closed');
    const queued = new GrepLineMatcher('x', 0);
    try {
      const answer = queued.matchingLines('a\nx', 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(liveGrepWorkers()).toBe(1);
      expect(waitingGrepMatchers()).toBe(1);
      await busy.close();
      await rejected;
      expect(await answer).toEqual([1]);
      expect(waitingGrepMatchers()).toBe(0);
    } finally {
      await queued.close();
    }
    expect(liveGrepWorkers()).toBe(0);
  });

  it('closed while waiting, rejects its request, starts no thread and leaves the queue', async () => {
    const busy = new GrepLineMatcher(slowPattern, 0);
    const blocked = busy.matchingLines('a'.repeat(200_000), 1);
    const rejected = expect(blocked).rejects.toThrow('the grep matcher was closed');
    const queued = new GrepLineMatcher('x', 0);
    const answer = queued.matchingLines('x', 1);
    expect(waitingGrepMatchers()).toBe(1);
    const closedRejection = expect(answer).rejects.toThrow('the grep matcher was closed');
    await queued.close();
    await closedRejection;
    expect(waitingGrepMatchers()).toBe(0);
    expect(liveGrepWorkers()).toBe(1);
    await busy.close();
    await rejected;
    expect(liveGrepWorkers()).toBe(0);
    await expectAFreshMatcherWorks();
  });

  it('gives the slot back when closed right after it was granted, before starting the thread', async () => {
    const matcher = new GrepLineMatcher('x', 0);
    const answer = matcher.matchingLines('x', 1);
    const rejectedAnswer = expect(answer).rejects.toThrow('the grep matcher was closed');
    await matcher.close();
    await rejectedAnswer;
    expect(liveGrepWorkers()).toBe(0);
    await expectAFreshMatcherWorks();
  });

  it('a thread over its heap limit rejects the request with the memory error and frees its slot', async () => {
    const matcher = new GrepLineMatcher('x', 0, 8);
    // Two million lines make the thread hold a 16 MB array of line strings, twice its heap limit.
    await expect(matcher.matchingLines('\n'.repeat(2_000_000), 1)).rejects.toThrow(
      'Worker terminated due to reaching memory limit: JS heap out of memory',
    );
    await expect(matcher.matchingLines('x', 1)).rejects.toThrow(/memory limit/);
    await matcher.close();
    expect(liveGrepWorkers()).toBe(0);
    await expectAFreshMatcherWorks();
  });
});
