import { Worker } from 'node:worker_threads';

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

let liveWorkers = 0;

/** How many matching threads are running right now (all `GrepLineMatcher`s together). */
export function liveGrepWorkers(): number {
  return liveWorkers;
}

/**
 * Matches the lines of file texts against one RE2 pattern in a `worker_threads` thread, so that a
 * slow match (re2js is linear in the input, but its cost per byte grows with the pattern's
 * compiled size) never blocks the event loop, and can be cut short by `close()`.
 *
 * The thread starts on the first `matchingLines` call, so a search that finds no file to read
 * starts none. Starting one costs about 25 ms (measured: `new Worker` returns in under 1 ms, the
 * first answer arrives 24–28 ms later; `terminate()` takes about 1 ms), paid once per grep call
 * that reads a file, without blocking the event loop meanwhile. Requests are answered one at a time; the
 * caller awaits each before sending the next. The pattern must already have been compiled
 * successfully in the calling thread: a pattern the thread fails to compile rejects the request
 * with that error.
 */
export class GrepLineMatcher {
  private worker: Worker | null = null;
  private pending: PendingRequest | null = null;
  private failure: Error | null = null;
  private closed = false;

  constructor(
    private readonly pattern: string,
    private readonly flags: number,
  ) {}

  /** True once `close()` was called: later `matchingLines` calls reject. */
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * The 0-based indices of the lines of `text` (split on `\r?\n`) that match, in order, at most
   * `limit` of them. Rejects when the thread failed or stopped, or the matcher was closed.
   */
  matchingLines(text: string, limit: number): Promise<number[]> {
    if (this.closed) return Promise.reject(new Error('the grep matcher was closed'));
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new Error('the grep matcher is busy with another request'));
    const worker = this.startedWorker();
    return new Promise<number[]>((resolve, reject) => {
      this.pending = { resolve, reject };
      worker.postMessage({ text, limit });
    });
  }

  /** Stops the thread, if one was started, and resolves once it has exited. A pending request rejects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.settle(new Error('the grep matcher was closed'));
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private startedWorker(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { re2jsPath: RE2JS_PATH, pattern: this.pattern, flags: this.flags },
    });
    liveWorkers++;
    worker.on('message', (reply: WorkerReply) => this.onReply(reply));
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => {
      liveWorkers--;
      this.fail(new Error(`the grep worker stopped (exit code ${code})`));
    });
    this.worker = worker;
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
