import * as os from 'node:os';
import { Worker } from 'node:worker_threads';

import { type ReleaseSlot, type SlotGroup, WorkerSlots } from './worker-slots';

/**
 * The code of the matching thread, plain CommonJS so that it runs the same whether the server is
 * compiled (`dist/`) or its TypeScript sources are run by ts-jest (an `eval` worker needs no file
 * next to this module). It compiles the pattern once, then answers each `{text, limit}` message
 * with `{lines}` — the 0-based indices of the first `limit` lines of `text` (split on `\r?\n`)
 * that match — or `{error}` when matching throws. re2js is loaded from the absolute path the main
 * thread resolved, so the worker finds the same copy whatever its working directory.
 */
const WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { RE2JS } = require(workerData.re2jsPath);
const regex = RE2JS.compile(workerData.pattern, workerData.flags);
parentPort.on('message', ({ text, limit }) => {
  try {
    const lines = text.split(/\\r?\\n/);
    const found = [];
    for (let i = 0; i < lines.length && found.length < limit; i++) {
      if (regex.test(lines[i])) found.push(i);
    }
    parentPort.postMessage({ lines: found });
  } catch (error) {
    parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) });
  }
});
`;

const RE2JS_PATH = require.resolve('re2js');

/** What the matching thread answers to one `{text, limit}` request. */
type WorkerReply = { lines: number[] } | { error: string };

interface PendingRequest {
  resolve(lines: number[]): void;
  reject(error: Error): void;
}

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
  /** Threads running at once, extra ones aside (default `DEFAULT_GREP_WORKER_LIMIT`). */
  limit: number;
  /** Most threads one session's searches run at once (default `DEFAULT_GREP_WORKERS_PER_SESSION`). */
  perSessionLimit: number;
  /**
   * Threads beyond `limit` that only a session with no search running may start, so that other
   * sessions' slow searches do not make it wait (default `DEFAULT_GREP_EXTRA_WORKERS`). At most
   * `limit + extraLimit` threads run, however many sessions search.
   */
  extraLimit: number;
}

/** The matching threads of all `GrepLineMatcher`s of the process take a slot from here. */
const workerSlots = new WorkerSlots(DEFAULT_GREP_WORKER_LIMIT, {
  perGroupLimit: DEFAULT_GREP_WORKERS_PER_SESSION,
  extraLimit: DEFAULT_GREP_EXTRA_WORKERS,
});

let liveWorkers = 0;

/** How many matching threads are running right now (all `GrepLineMatcher`s together). */
export function liveGrepWorkers(): number {
  return liveWorkers;
}

/** How many `GrepLineMatcher`s wait for a slot to start their thread. */
export function waitingGrepMatchers(): number {
  return workerSlots.waiting;
}

/** How many matching threads the searches of `sessionId` (`null`: calls without a session) hold, starting or running. */
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
 * at least 1) and returns the settings before. Threads running already go on; more room starts
 * waiting matchers at once.
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
 * The thread starts on the first `matchingLines` call, so a search that finds no file to read
 * starts none. Threads are shared out between sessions (`configureGrepWorkers`): the matcher's
 * `group` — the session id of its grep call, or `null` — decides when a matcher whose first
 * request finds no room waits and which waiter goes next (`WorkerSlots`: a cap per session, the
 * session running fewest first, extra threads for a session with none running); `close()` ends
 * the wait without starting a thread. The thread's heap is capped
 * at `maxHeapMb`; a thread that exceeds it is stopped by V8 and the request rejects with
 * `Worker terminated due to reaching memory limit: JS heap out of memory`. Starting a thread costs
 * about 25 ms (measured: `new Worker` returns in under 1 ms, the first answer arrives 24–28 ms
 * later; `terminate()` takes about 1 ms), paid once per grep call that reads a file, without
 * blocking the event loop meanwhile. Requests are answered one at a time; the caller awaits each
 * before sending the next. The pattern must already have been compiled
 * successfully in the calling thread: a pattern the thread fails to compile rejects the request
 * with that error.
 */
export class GrepLineMatcher {
  private worker: Worker | null = null;
  /** The wait for a slot and the start of the thread, once the first request asked for it. */
  private starting: Promise<Worker | null> | null = null;
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
    return this.starting !== null && this.worker === null && this.failure === null && !this.closed;
  }

  /**
   * The 0-based indices of the lines of `text` (split on `\r?\n`) that match, in order, at most
   * `limit` of them. The first request waits for a slot to start the thread. Rejects when the
   * thread failed or stopped, or the matcher was closed.
   */
  matchingLines(text: string, limit: number): Promise<number[]> {
    if (this.closed) return Promise.reject(new Error('the grep matcher was closed'));
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new Error('the grep matcher is busy with another request'));
    return new Promise<number[]>((resolve, reject) => {
      this.pending = { resolve, reject };
      void this.send(text, limit);
    });
  }

  /**
   * Stops waiting for a slot, or stops the thread if one was started, and resolves once the thread
   * has exited and its slot is free again. A pending request rejects.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWaiting.abort();
    this.settle(new Error('the grep matcher was closed'));
    await this.starting;
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  /** Posts the pending request to the thread, starting it first if this is the first request. */
  private async send(text: string, limit: number): Promise<void> {
    const worker = this.worker ?? (await this.startedWorker());
    // Without a thread the matcher was closed meanwhile, or starting failed: the request was rejected.
    worker?.postMessage({ text, limit });
  }

  /** The thread, started once a slot is free; `null` if the matcher was closed first or the start failed. */
  private startedWorker(): Promise<Worker | null> {
    this.starting ??= this.startWhenSlotFree();
    return this.starting;
  }

  private async startWhenSlotFree(): Promise<Worker | null> {
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
      this.worker = this.spawn(release);
    } catch (error) {
      release();
      this.fail(asError(error));
    }
    return this.worker;
  }

  /** Starts the thread in a slot already taken; the slot is released when the thread exits, however. */
  private spawn(release: ReleaseSlot): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { re2jsPath: RE2JS_PATH, pattern: this.pattern, flags: this.flags },
      resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb },
    });
    liveWorkers++;
    worker.on('message', (reply: WorkerReply) => this.onReply(reply));
    worker.on('error', (error) => this.fail(asError(error)));
    worker.on('exit', (code) => {
      liveWorkers--;
      release();
      this.fail(new Error(`the grep worker stopped (exit code ${code})`));
    });
    return worker;
  }

  private onReply(reply: WorkerReply): void {
    if ('error' in reply) this.settle(new Error(reply.error));
    else this.settle(null, reply.lines);
  }

  /** Records the first failure of the thread (later requests reject with it) and rejects the pending request. */
  private fail(error: Error): void {
    this.failure ??= error;
    this.settle(this.failure);
  }

  private settle(error: Error | null, lines: number[] = []): void {
    const pending = this.pending;
    this.pending = null;
    if (!pending) return;
    if (error) pending.reject(error);
    else pending.resolve(lines);
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
