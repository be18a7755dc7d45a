import { Worker } from 'node:worker_threads';

/**
 * The checkpointing thread, plain CommonJS so that it runs the same from `dist/` and under ts-jest
 * (an `eval` worker needs no file next to this module). For each request it opens its own
 * connection to the database file, runs a PASSIVE checkpoint — which copies committed WAL frames
 * into the database and syncs both files, without blocking the server's reads or writes — and
 * closes the connection again, so that it never holds the file between two requests.
 */
const WORKER_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driverPath);
parentPort.on('message', (filename) => {
  let db;
  try {
    db = new Database(filename, { fileMustExist: true });
    db.pragma('busy_timeout = 1000');
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ frames: row ? row.log : 0, checkpointed: row ? row.checkpointed : 0 });
  } catch (error) {
    parentPort.postMessage({ error: error instanceof Error ? error.message : String(error) });
  } finally {
    if (db) db.close();
  }
});
`;

const DRIVER_PATH = require.resolve('better-sqlite3');

/** What the thread answers to one request. */
type CheckpointReply = { frames: number; checkpointed: number } | { error: string };

/** How often the checkpointer runs: after so many commits, or once writes have paused this long. */
export interface WalCheckpointerOptions {
  /** Commits after which a checkpoint is asked for (default 64). */
  everyCommits?: number;
  /** A checkpoint is asked for this long after the last commit, if none ran since (default 500 ms). */
  idleMs?: number;
  logger?: { warn(message: string): void };
  /** Called once if the thread fails: the caller then lets SQLite checkpoint on its own again. */
  onFailure?: () => void;
  /** Called after each checkpoint with SQLite's answer: WAL frames, and how many are in the database file. */
  onCheckpoint?: (result: { frames: number; checkpointed: number }) => void;
}

/**
 * Checkpoints a WAL-mode SQLite file from a worker thread. A checkpoint syncs the database file
 * and the WAL to disk (`synchronous=NORMAL` syncs nothing else), which takes milliseconds on
 * ordinary disks: done by SQLite's automatic checkpoint, that time is spent inside whichever
 * commit crosses the threshold, on the event loop. Here the event loop only counts commits and
 * posts a message; the thread does the copying and syncing on its own connection.
 *
 * The server's connection keeps a much higher automatic threshold as a backstop
 * (`HarnessDatabase`), for a WAL the thread cannot keep short (a thread that failed, or a
 * checkpoint that never catches up with continuous writes).
 */
export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly everyCommits: number;
  private readonly idleMs: number;
  private readonly logger: { warn(message: string): void };
  private readonly onFailure: () => void;
  private readonly onCheckpoint: (result: { frames: number; checkpointed: number }) => void;
  private commits = 0;
  private running = false;
  private wanted = false;
  private idleTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private failed = false;

  constructor(
    private readonly filename: string,
    options: WalCheckpointerOptions = {},
  ) {
    this.everyCommits = options.everyCommits ?? 64;
    this.idleMs = options.idleMs ?? 500;
    this.logger = options.logger ?? console;
    this.onFailure = options.onFailure ?? (() => undefined);
    this.onCheckpoint = options.onCheckpoint ?? (() => undefined);
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { driverPath: DRIVER_PATH } });
    // Never what keeps the process alive: a server that stops needs no last checkpoint from here
    // (closing the server's connection checkpoints what is left).
    this.worker.unref();
    this.worker.on('message', (reply: CheckpointReply) => this.onReply(reply));
    this.worker.on('error', (error) => this.fail(error.message));
    this.worker.on('exit', () => this.fail('the checkpoint thread stopped'));
  }

  /** Whether checkpoints still run (the thread did not fail). */
  get working(): boolean {
    return !this.failed && !this.closed;
  }

  /** Counts one commit; asks for a checkpoint when enough have piled up, or once writes pause. */
  noteCommit(): void {
    if (!this.working) return;
    if (++this.commits >= this.everyCommits) {
      this.request();
      return;
    }
    if (this.idleTimer) this.idleTimer.refresh();
    else {
      this.idleTimer = setTimeout(() => {
        this.idleTimer = null;
        if (this.commits > 0) this.request();
      }, this.idleMs);
      this.idleTimer.unref();
    }
  }

  /** Stops the thread; a checkpoint it is running is left to SQLite to finish or discard safely. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    return this.worker.terminate().then(() => undefined);
  }

  private request(): void {
    this.commits = 0;
    if (this.running) {
      this.wanted = true;
      return;
    }
    this.running = true;
    this.worker.postMessage(this.filename);
  }

  private onReply(reply: CheckpointReply): void {
    this.running = false;
    if ('error' in reply) this.logger.warn(`the WAL checkpoint failed: ${reply.error}`);
    else this.onCheckpoint(reply);
    if (this.wanted && this.working) {
      this.wanted = false;
      this.request();
    }
  }

  private fail(reason: string): void {
    if (this.closed || this.failed) return;
    this.failed = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.logger.warn(`${reason}; SQLite checkpoints the WAL on the event loop from now on`);
    this.onFailure();
  }
}
