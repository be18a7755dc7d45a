import * as os from 'node:os';

import { RE2JS } from 're2js';

import {
  closeGrepWorkers,
  configureGrepWorkers,
  DEFAULT_GREP_EXTRA_WORKERS,
  DEFAULT_GREP_WORKER_LIMIT,
  DEFAULT_GREP_WORKERS_PER_SESSION,
  type GrepWorkerSettings,
  GrepLineMatcher,
  grepWorkerSettings,
  grepWorkerThreads,
  liveGrepWorkers,
  liveGrepWorkersOf,
  pooledGrepWorkers,
  setGrepThreadIdleMs,
  setGrepWorkerLimit,
  waitingGrepMatchers,
} from './grep-worker';

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

  it('answers several texts in one request, each its own indices, `limit` counted over all of them', async () => {
    const matcher = new GrepLineMatcher('x', 0);
    try {
      const texts = ['a\nx\nx', 'none', 'x', 'x\nb\nx'];
      expect(await matcher.matchingLinesOf(texts, 10)).toEqual([[1, 2], [], [0], [0, 2]]);
      // The limit falls inside the third text: the fourth is not matched.
      expect(await matcher.matchingLinesOf(texts, 3)).toEqual([[1, 2], [], [0], []]);
      expect(await matcher.matchingLinesOf([], 3)).toEqual([]);
    } finally {
      await matcher.close();
    }
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

describe('GrepLineMatcher sharing the matching threads', () => {
  const slowPattern = '(?:a?){1000}a{1000}[bc]';
  let previous: GrepWorkerSettings;

  beforeEach(() => {
    previous = configureGrepWorkers({ limit: 1, perSessionLimit: 1, extraLimit: 0 });
  });

  afterEach(() => {
    configureGrepWorkers(previous);
  });

  it('defaults to one thread per available core, half of them per session, and half again as extra threads', () => {
    expect(DEFAULT_GREP_WORKER_LIMIT).toBe(Math.max(1, os.availableParallelism()));
    expect(DEFAULT_GREP_WORKERS_PER_SESSION).toBe(Math.ceil(DEFAULT_GREP_WORKER_LIMIT / 2));
    expect(DEFAULT_GREP_EXTRA_WORKERS).toBe(Math.ceil(DEFAULT_GREP_WORKER_LIMIT / 2));
    expect(previous).toEqual({
      limit: DEFAULT_GREP_WORKER_LIMIT,
      perSessionLimit: DEFAULT_GREP_WORKERS_PER_SESSION,
      extraLimit: DEFAULT_GREP_EXTRA_WORKERS,
    });
    expect(setGrepWorkerLimit(3)).toBe(1);
    expect(grepWorkerSettings()).toEqual({ limit: 3, perSessionLimit: 1, extraLimit: 0 });
    expect(() => configureGrepWorkers({ perSessionLimit: 0 })).toThrow(RangeError);
    expect(grepWorkerSettings()).toEqual({ limit: 3, perSessionLimit: 1, extraLimit: 0 });
  });

  it("starts a session's matcher on an extra thread while another session's searches hold the regular one", async () => {
    configureGrepWorkers({ limit: 1, perSessionLimit: 1, extraLimit: 1 });
    const busy = new GrepLineMatcher(slowPattern, 0, undefined, 1);
    const blocked = busy.matchingLines('a'.repeat(200_000), 1);
    const rejected = expect(blocked).rejects.toThrow('the grep matcher was closed');
    const sameSession = new GrepLineMatcher('x', 0, undefined, 1);
    const queued = sameSession.matchingLines('x', 1);
    const queuedRejected = expect(queued).rejects.toThrow('the grep matcher was closed');
    const otherSession = new GrepLineMatcher('x', 0, undefined, 2);
    try {
      expect(await otherSession.matchingLines('a\nx', 1)).toEqual([1]);
      // Session 1's second matcher still waits behind its first, which still runs.
      expect(waitingGrepMatchers()).toBe(1);
      expect(liveGrepWorkersOf(1)).toBe(1);
      expect(liveGrepWorkersOf(2)).toBe(1);
    } finally {
      await Promise.all([otherSession.close(), sameSession.close(), busy.close()]);
    }
    await Promise.all([rejected, queuedRejected]);
    expect(liveGrepWorkers()).toBe(0);
    expect(waitingGrepMatchers()).toBe(0);
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

describe('GrepLineMatcher threads, pooled', () => {
  const slowPattern = '(?:a?){1000}a{1000}[bc]';

  beforeEach(async () => {
    await closeGrepWorkers();
  });

  afterAll(async () => {
    await closeGrepWorkers();
  });

  async function search(pattern: string, text: string): Promise<number[]> {
    const matcher = new GrepLineMatcher(pattern, 0);
    try {
      return await matcher.matchingLines(text, 10);
    } finally {
      await matcher.close();
    }
  }

  it('gives a thread back after a search, and the next search — another pattern — uses it', async () => {
    expect(await search('x', 'a\nx')).toEqual([1]);
    expect(grepWorkerThreads()).toBe(1);
    expect(pooledGrepWorkers()).toBe(1);
    expect(liveGrepWorkers()).toBe(0);
    expect(await search('a+', 'aa\nb\na')).toEqual([0, 2]);
    expect(await search('(unclosed', 'x').catch((error: Error) => error.message)).toMatch(/missing closing \)/);
    // Still the one thread: a pattern that does not compile fails the request, not the thread.
    expect(grepWorkerThreads()).toBe(1);
    expect(pooledGrepWorkers()).toBe(1);
  });

  it('stops a thread closed in the middle of a match instead of pooling it', async () => {
    await search('x', 'x');
    const matcher = new GrepLineMatcher(slowPattern, 0);
    const pending = matcher.matchingLines('a'.repeat(200_000), 1);
    const rejected = expect(pending).rejects.toThrow('the grep matcher was closed');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(pooledGrepWorkers()).toBe(0);
    await matcher.close();
    await rejected;
    expect(grepWorkerThreads()).toBe(0);
    expect(pooledGrepWorkers()).toBe(0);
  });

  it('pools no thread that went over its heap limit', async () => {
    const matcher = new GrepLineMatcher('x', 0, 8);
    await expect(matcher.matchingLines('\n'.repeat(2_000_000), 1)).rejects.toThrow(/memory limit/);
    await matcher.close();
    expect(grepWorkerThreads()).toBe(0);
    expect(pooledGrepWorkers()).toBe(0);
  });

  it('keeps no more threads than may search at once', async () => {
    const previous = configureGrepWorkers({ limit: 2, perSessionLimit: 2, extraLimit: 0 });
    try {
      const matchers = Array.from({ length: 2 }, () => new GrepLineMatcher('x', 0));
      await Promise.all(matchers.map((matcher) => matcher.matchingLines('x', 1)));
      expect(liveGrepWorkers()).toBe(2);
      configureGrepWorkers({ limit: 1, perSessionLimit: 1 });
      await Promise.all(matchers.map((matcher) => matcher.close()));
      expect(pooledGrepWorkers()).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(grepWorkerThreads()).toBe(1);
    } finally {
      configureGrepWorkers(previous);
    }
  });

  it('stops a thread that waited in the pool too long, and keeps one that was taken meanwhile', async () => {
    const previous = setGrepThreadIdleMs(1_000);
    try {
      await search('x', 'x');
      expect(pooledGrepWorkers()).toBe(1);
      // Taken again before its time was up: its wait starts over when it comes back. The check
      // below comes 200 ms after a wait that had not started over would have ended, and 400 ms
      // before the new one ends.
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(await search('y', 'y')).toEqual([0]);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(pooledGrepWorkers()).toBe(1);
      expect(grepWorkerThreads()).toBe(1);
      const deadline = Date.now() + 5_000;
      while (grepWorkerThreads() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(pooledGrepWorkers()).toBe(0);
      expect(grepWorkerThreads()).toBe(0);
      expect(await search('x', 'x')).toEqual([0]);
    } finally {
      setGrepThreadIdleMs(previous);
    }
  });

  it('stops the pooled threads on closeGrepWorkers, and a later search starts one again', async () => {
    await search('x', 'x');
    expect(pooledGrepWorkers()).toBe(1);
    await closeGrepWorkers();
    expect(pooledGrepWorkers()).toBe(0);
    expect(grepWorkerThreads()).toBe(0);
    expect(await search('x', 'x')).toEqual([0]);
    expect(pooledGrepWorkers()).toBe(1);
  });
});
