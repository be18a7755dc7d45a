import * as os from 'node:os';
import { Worker } from 'node:worker_threads';

import { type ReleaseSlot, type SlotGroup, WorkerSlots } from './worker-slots';

/**
 * The code of a matching thread, plain CommonJS so that it runs the same whether the server is
 * compiled (`dist/`) or its TypeScript sources are run by ts-jest (an `eval` worker needs no file
 * next to this module). It answers each `{pattern, flags, texts, limit}` message with `{lines}` —
 * for each text in order, the 0-based indices of its lines (split on `\r?\n`) that match, the
 * first `limit` over all the texts (texts after the limit is reached get no entry) — or `{error}`
 * when the pattern does not compile or matching throws. A thread serves one search at a
 * time but any number of searches in its life, so it keeps the patterns it compiled last. re2js is
 * loaded from the absolute path the main thread resolved, so the worker finds the same copy
 * whatever its working directory.
 */
const WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { RE2JS } = require(workerData.re2jsPath);
const compiled = new Map();
function regexOf(pattern, flags) {
  const key = flags + ':' + pattern;
  let regex = compiled.get(key);
  if (regex === undefined) {
    regex = RE2JS.compile(pattern, flags);
    if (compiled.size >= 32) compiled.delete(compiled.keys().next().value);
  } else {
    compiled.delete(key);
  }
  compiled.set(key, regex);
  return regex;
}
parentPort.on('message', ({ pattern, flags, texts, limit }) => {
  try {
    const regex = regexOf(pattern, flags);
    const found = [];
    let count = 0;
    for (let t = 0; t < texts.length && count < limit; t++) {
      const text = texts[t];
      const lines = text.split(/\\r?\\n/);
      const hits = [];
      for (let i = 0; i < lines.length && count < limit; i++) {
        if (regex.test(lines[i])) {
          hits.push(i);
          count++;
        }
      }
      found.push(hits);
    }
    parentPort.postMessage({ lines: found });
  } catch (error) {
    parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
});
`;

const RE2JS_PATH = require.resolve('re2js');

/** What a matching thread answers to one request. */
type WorkerReply = { lines: number[][] } | { error: string };

/**
 * Default heap limit of a matching thread, in MB (V8's old generation, `maxOldGenerationSizeMb` of
 * the worker's `resourceLimits`). Measured peak heap of a thread for the costliest 1 MiB inputs
 * (the default `maxFileBytes`): about 40–50 MB for a million empty lines (one string per line),
 * 8 MB for one 1 MiB line, 20–35 MB for the slowest accepted pattern. 256 MB leaves five times
 * that, room for a larger `maxFileBytes`, while a runaway thread stops at about a quarter GB
 * instead of growing with the process.
 */
export const GREP_WORKER_MAX_HEAP_MB = 256;

/** Default of `GrepWorkerSettings.limit`: one matching thread per core the process may use. */
export const DEFAULT_GREP_WORKER_LIMIT = Math.max(1, os.availableParallelism());

/**
 * Default of `GrepWorkerSettings.perSessionLimit`: half the threads (rounded up). Two sessions
 * searching at once then share the cores without either waiting for the other.
 */
export const DEFAULT_GREP_WORKERS_PER_SESSION = Math.ceil(DEFAULT_GREP_WORKER_LIMIT / 2);

/**
 * Default of `GrepWorkerSettings.extraLimit`: half the threads (rounded up) again, so that at most
 * `limit + extraLimit` threads — about one and a half per core — run at all, each with its heap limit.
 */
export const DEFAULT_GREP_EXTRA_WORKERS = Math.ceil(DEFAULT_GREP_WORKER_LIMIT / 2);

/**
 * How the matching threads of the process are shared out between sessions (`WorkerSlots` has
 * the rules). A grep call made with a session id counts against that session; calls without one
 * count together as one more session.
 */
export interface GrepWorkerSettings {
  /** Threads searching at once, extra ones aside (default `DEFAULT_GREP_WORKER_LIMIT`). */
  limit: number;
  /** Most threads one session's searches use at once (default `DEFAULT_GREP_WORKERS_PER_SESSION`). */
  perSessionLimit: number;
  /**
   * Threads beyond `limit` that only a session with no search running may use, so that other
   * sessions' slow searches do not make it wait (default `DEFAULT_GREP_EXTRA_WORKERS`). At most
   * `limit + extraLimit` threads search, however many sessions search.
   */
  extraLimit: number;
}

/** Who may use a matching thread, and when: every `GrepLineMatcher` of the process takes a slot here. */
const workerSlots = new WorkerSlots(DEFAULT_GREP_WORKER_LIMIT, {
  perGroupLimit: DEFAULT_GREP_WORKERS_PER_SESSION,
  extraLimit: DEFAULT_GREP_EXTRA_WORKERS,
});

/** A request a matching thread is answering. */
interface PendingRequest {
  resolve(lines: number[][]): void;
  reject(error: Error): void;
}

/** Answers a request that was waiting (none: nothing to do): its lines, or `error`. */
function settlePending(pending: PendingRequest | null, error: Error | null, lines: number[][]): void {
  if (!pending) return;
  if (error) pending.reject(error);
  else pending.resolve(lines);
}

/**
 * One thread of the pool: it answers one request at a time, for any pattern. Once it failed (its
 * heap limit, a crash) or exited, every request rejects with that failure, and it is never pooled
 * again.
 */
class MatchingThread {
  private readonly worker: Worker;
  private pending: PendingRequest | null = null;
  private failure: Error | null = null;
  private expiry: NodeJS.Timeout | null = null;
  /** Resolves once the thread has exited. */
  readonly exited: Promise<void>;

  constructor(readonly heapMb: number) {
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { re2jsPath: RE2JS_PATH },
      resourceLimits: { maxOldGenerationSizeMb: heapMb },
    });
    this.worker.on('message', (reply: WorkerReply) => ('error' in reply ? this.settle(new Error(reply.error)) : this.settle(null, reply.lines)));
    this.worker.on('error', (error) => this.fail(asError(error)));
    this.exited = new Promise<void>((resolve) =>
      this.worker.on('exit', (code) => {
        threadCount--;
        this.fail(new Error(`the grep worker stopped (exit code ${code})`));
        resolve();
      }),
    );
    threadCount++;
  }

  /** Whether it may serve another search: it has not failed and answers nothing now. */
  get reusable(): boolean {
    return this.failure === null && this.pending === null;
  }

  request(pattern: string, flags: number, texts: readonly string[], limit: number): Promise<number[][]> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new Error('the grep worker is busy with another request'));
    return new Promise<number[][]>((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage({ pattern, flags, texts, limit });
    });
  }

  /** A pooled thread does not keep the process alive; one that searches does. */
  setIdle(idle: boolean): void {
    if (idle) this.worker.unref();
    else this.worker.ref();
  }

  /** Calls `expire` once the thread has waited in the pool for `afterMs`, unless it is taken first. */
  expireAfter(afterMs: number, expire: () => void): void {
    this.stopExpiry();
    this.expiry = setTimeout(expire, afterMs);
    this.expiry.unref();
  }

  stopExpiry(): void {
    if (this.expiry) clearTimeout(this.expiry);
    this.expiry = null;
  }

  /** Stops the thread, whatever it is doing; resolves once it has exited. */
  async terminate(): Promise<void> {
    this.stopExpiry();
    await this.worker.terminate();
    await this.exited;
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.settle(this.failure);
  }

  private settle(error: Error | null, lines: number[][] = []): void {
    const pending = this.pending;
    this.pending = null;
    settlePending(pending, error, lines);
  }
}

/** Threads alive, searching or pooled. */
let threadCount = 0;
/** Threads a matcher holds (searching, or between two files of its search). */
let busyThreads = 0;
/** Threads waiting in the pool for the next search, the most recently used last. */
const pooled: MatchingThread[] = [];
/** Set by `closeGrepWorkers`: threads given back are stopped rather than pooled, until the next search. */
let closing = false;

/**
 * How long a thread waits in the pool for another search before it is stopped. Starting one takes
 * some 25 ms and, measured under the load benchmark, about 0.1 s of CPU (a new V8 heap, Node's
 * start-up in the thread, re2js loaded and compiled again): a pool emptied after every quiet
 * second made each burst of searches pay that again. Half a minute keeps the threads over the
 * pauses between bursts, and gives their memory back when the server is left alone.
 */
export const GREP_THREAD_IDLE_MS = 30_000;
let threadIdleMs = GREP_THREAD_IDLE_MS;

/** Sets how long a pooled thread waits before it is stopped (tests); returns the previous value. */
export function setGrepThreadIdleMs(ms: number): number {
  const previous = threadIdleMs;
  threadIdleMs = ms;
  return previous;
}

/** The most threads kept waiting: as many as may search at once. */
function poolLimit(): number {
  const { limit, extraLimit } = workerSlots.settings;
  return limit + extraLimit;
}

/** A thread for a search: a pooled one with the heap limit asked for, else a new one (about 25 ms to start). */
function takeThread(heapMb: number): MatchingThread {
  closing = false;
  for (let index = pooled.length - 1; index >= 0; index--) {
    if (pooled[index].heapMb !== heapMb) continue;
    const [thread] = pooled.splice(index, 1);
    thread.stopExpiry();
    thread.setIdle(false);
    return thread;
  }
  return new MatchingThread(heapMb);
}

/** Gives a thread back after a search: pooled if it can serve another, else stopped. */
async function giveBack(thread: MatchingThread): Promise<void> {
  if (!thread.reusable || closing) {
    await thread.terminate();
    return;
  }
  thread.setIdle(true);
  pooled.push(thread);
  thread.expireAfter(threadIdleMs, () => {
    const index = pooled.indexOf(thread);
    if (index >= 0) pooled.splice(index, 1);
    void thread.terminate();
  });
  // The oldest go first when there are more than may ever search at once.
  while (pooled.length > poolLimit()) void pooled.shift()?.terminate();
}

/** How many matching threads are searching right now (all `GrepLineMatcher`s together); pooled ones are not counted. */
export function liveGrepWorkers(): number {
  return busyThreads;
}

/** How many matching threads wait in the pool for the next search. */
export function pooledGrepWorkers(): number {
  return pooled.length;
}

/** How many matching threads exist, searching or pooled. */
export function grepWorkerThreads(): number {
  return threadCount;
}

/**
 * Stops the pooled threads and resolves once they have exited; threads still searching are
 * stopped when their search ends. For the server's shutdown (and tests). A later search starts
 * threads again.
 */
export async function closeGrepWorkers(): Promise<void> {
  closing = true;
  await Promise.all(pooled.splice(0).map((thread) => thread.terminate()));
}

/** How many `GrepLineMatcher`s wait for a slot to start their search. */
export function waitingGrepMatchers(): number {
  return workerSlots.waiting;
}

/** How many matching threads the searches of `sessionId` (`null`: calls without a session) hold. */
export function liveGrepWorkersOf(sessionId: number | null): number {
  return workerSlots.heldBy(sessionId);
}

/** The settings in force. */
export function grepWorkerSettings(): GrepWorkerSettings {
  const { limit, perGroupLimit, extraLimit } = workerSlots.settings;
  return { limit, perSessionLimit: perGroupLimit ?? limit, extraLimit };
}

/**
 * Changes how the matching threads are shared out (whole numbers; `limit` and `perSessionLimit`
 * at least 1) and returns the settings before. Searches going on go on; more room starts waiting
 * matchers at once.
 */
export function configureGrepWorkers(settings: Partial<GrepWorkerSettings>): GrepWorkerSettings {
  const previous = grepWorkerSettings();
  const { limit, perSessionLimit, extraLimit } = { ...previous, ...settings };
  workerSlots.configure({ limit, perGroupLimit: perSessionLimit, extraLimit });
  return previous;
}

/**
 * Sets `GrepWorkerSettings.limit` alone (a whole number, at least 1) and returns the previous
 * limit; see `configureGrepWorkers`.
 */
export function setGrepWorkerLimit(limit: number): number {
  return configureGrepWorkers({ limit }).limit;
}

/**
 * Matches the lines of file texts against one RE2 pattern in a `worker_threads` thread, so that a
 * slow match (re2js is linear in the input, but its cost per byte grows with the pattern's
 * compiled size) never blocks the event loop, and can be cut short by `close()`.
 *
 * Threads are pooled: one grep call takes a thread on its first request (a search that finds no
 * file to read takes none), keeps it for all its files and gives it back on
 * `close()`, to serve the next search — of any session, with any pattern — without the 25 ms a
 * new thread takes to start (measured: `new Worker` returns in under 1 ms, the first answer
 * arrives 24–28 ms later). A thread stopped in the middle of a match (the call's deadline, a
 * cancelled run) cannot be reused and is terminated instead (about 1 ms); so is one that failed.
 * The pool keeps at most as many threads as may search at once (`limit + extraLimit`), and its
 * waiting threads never keep the process alive; one that waited `GREP_THREAD_IDLE_MS` is stopped,
 * and `closeGrepWorkers` stops them all.
 *
 * Who may use a thread, and when, is `WorkerSlots`' decision (`configureGrepWorkers`): the
 * matcher's `group` — the session id of its grep call, or `null` — decides when a matcher whose
 * first request finds no room waits and which waiter goes next (a cap per session, the session
 * running fewest first, extra threads for a session with none running); `close()` ends the wait
 * without taking a thread. A thread's heap is capped at `maxHeapMb`; a thread that exceeds it is
 * stopped by V8 and the request rejects with `Worker terminated due to reaching memory limit: JS
 * heap out of memory`. Requests are answered one at a time; the caller awaits each before sending
 * the next. The pattern must already have been compiled successfully in the calling thread: a
 * pattern the thread fails to compile rejects the request with that error.
 */
export class GrepLineMatcher {
  private thread: MatchingThread | null = null;
  private release: ReleaseSlot | null = null;
  /** The wait for a slot and the taking of a thread, once the first request asked for it. */
  private starting: Promise<MatchingThread | null> | null = null;
  private readonly stopWaiting = new AbortController();
  private pending: PendingRequest | null = null;
  private failure: Error | null = null;
  private closed = false;

  constructor(
    private readonly pattern: string,
    private readonly flags: number,
    private readonly maxHeapMb: number = GREP_WORKER_MAX_HEAP_MB,
    private readonly group: SlotGroup = null,
  ) {}

  /** True once `close()` was called: later `matchingLines` calls reject. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** True while the first request waits in the queue for a free slot (no thread yet). */
  get isWaitingForSlot(): boolean {
    return this.starting !== null && this.thread === null && this.failure === null && !this.closed;
  }

  /**
   * The 0-based indices of the lines of `text` (split on `\r?\n`) that match, in order, at most
   * `limit` of them. The first request waits for a slot and takes a thread. Rejects when the
   * thread failed or stopped, or the matcher was closed.
   */
  matchingLines(text: string, limit: number): Promise<number[]> {
    return this.matchingLinesOf([text], limit).then((found) => found[0] ?? []);
  }

  /**
   * `matchingLines` for several texts in one request: for each text, in order, the indices of its
   * matching lines, at most `limit` over all of them (a text after the limit was reached gets
   * `[]`). A search sends the files it read together, so it holds its thread for one round trip
   * rather than one per file.
   */
  matchingLinesOf(texts: readonly string[], limit: number): Promise<number[][]> {
    if (this.closed) return Promise.reject(new Error('the grep matcher was closed'));
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new Error('the grep matcher is busy with another request'));
    return new Promise<number[][]>((resolve, reject) => {
      this.pending = { resolve, reject };
      void this.send(texts, limit);
    }).then((found) => texts.map((_, index) => found[index] ?? []));
  }

  /**
   * Stops waiting for a slot, or gives the thread back — stopping it if it is still matching —
   * and resolves once the slot is free again (and a stopped thread has exited). A pending
   * request rejects.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWaiting.abort();
    this.settle(new Error('the grep matcher was closed'));
    await this.starting;
    const thread = this.thread;
    const release = this.release;
    this.thread = null;
    this.release = null;
    if (thread) {
      try {
        await giveBack(thread);
      } finally {
        busyThreads--;
        release?.();
      }
    }
  }

  /** Sends the pending request to the thread, taking one first if this is the first request. */
  private async send(texts: readonly string[], limit: number): Promise<void> {
    const thread = this.thread ?? (await this.startedThread());
    // Without a thread the matcher was closed meanwhile, or taking one failed: the request was rejected.
    if (!thread || !this.pending) return;
    try {
      this.settle(null, await thread.request(this.pattern, this.flags, texts, limit));
    } catch (error) {
      // A thread that failed or stopped fails the whole search; an error answer fails one request.
      if (!thread.reusable) this.failure ??= asError(error);
      this.settle(asError(error));
    }
  }

  /** The thread, taken once a slot is free; `null` if the matcher was closed first or taking one failed. */
  private startedThread(): Promise<MatchingThread | null> {
    this.starting ??= this.takeWhenSlotFree();
    return this.starting;
  }

  private async takeWhenSlotFree(): Promise<MatchingThread | null> {
    let release: ReleaseSlot;
    try {
      release = await workerSlots.acquire({ group: this.group, signal: this.stopWaiting.signal });
    } catch {
      return null; // closed while waiting: no slot taken
    }
    if (this.closed) {
      release();
      return null;
    }
    try {
      this.thread = takeThread(this.maxHeapMb);
    } catch (error) {
      release();
      this.failure ??= asError(error);
      this.settle(this.failure);
      return null;
    }
    this.release = release;
    busyThreads++;
    return this.thread;
  }

  private settle(error: Error | null, lines: number[][] = []): void {
    const pending = this.pending;
    this.pending = null;
    settlePending(pending, error, lines);
  }
}

/**
 * `error` as an `Error` of this realm with the same message. Errors raised by Node for a thread
 * (such as `ERR_WORKER_OUT_OF_MEMORY`) may come from another realm, where `instanceof Error` fails
 * and their text would start with `Error [CODE]: `.
 */
function asError(error: unknown): Error {
  if (error instanceof Error) return error;
  const message = (error as { message?: unknown } | null)?.message;
  return new Error(typeof message === 'string' ? message : String(error));
}
