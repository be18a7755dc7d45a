import Database, { type Statement } from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../harness/runtime/error-message';
import { SchemaVersionError } from './persistence-errors';
import { WalCheckpointer } from './wal-checkpointer';

/** The schema this build writes; stored in `PRAGMA user_version`. Later migrations step it up. */
export const SCHEMA_VERSION = 7;

const SCHEMA_V1 = `
CREATE TABLE IF NOT EXISTS sessions (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id          INTEGER NOT NULL,
  execution_mode   TEXT    NOT NULL,
  permission_level TEXT    NOT NULL,
  tools            TEXT    NULL,
  mcp_servers      TEXT    NOT NULL DEFAULT '[]',
  workspace        TEXT    NOT NULL,
  created_at       TEXT    NOT NULL
);

CREATE TABLE IF NOT EXISTS messages (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id   INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  execution_id TEXT    NULL,
  role         TEXT    NOT NULL,
  content      TEXT    NULL,
  tool_calls   TEXT    NULL,
  tool_call_id TEXT    NULL,
  created_at   TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, id);

CREATE TABLE IF NOT EXISTS activities (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id   INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  execution_id TEXT    NULL,
  tool_call_id TEXT    NOT NULL,
  tool_name    TEXT    NOT NULL,
  type         TEXT    NOT NULL,
  target       TEXT    NOT NULL,
  summary      TEXT    NOT NULL,
  status       TEXT    NOT NULL CHECK (status IN ('SUCCESS', 'ERROR')),
  metadata     TEXT    NOT NULL DEFAULT '{}',
  created_at   TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_activities_session ON activities(session_id, id);

CREATE TABLE IF NOT EXISTS tasks (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id  INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  title       TEXT    NOT NULL,
  description TEXT    NOT NULL DEFAULT '',
  status      TEXT    NOT NULL,
  created_at  TEXT    NOT NULL,
  updated_at  TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_tasks_session ON tasks(session_id, id);
`;

/**
 * Steps from one schema version to the next, applied in order to files older than the step.
 * Version 1 is `SCHEMA_V1` itself.
 */
const MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  // Whether a tool message reports a failed call, for providers that can say so (Anthropic's is_error).
  { version: 2, sql: 'ALTER TABLE messages ADD COLUMN is_error INTEGER NOT NULL DEFAULT 0' },
  // Each run, from its start to how it ended: a row still 'running' at start-up is a run the
  // process did not live to finish, and is closed then (RunRecovery), with the results its last
  // round had staged.
  {
    version: 3,
    sql: `CREATE TABLE IF NOT EXISTS runs (
  execution_id TEXT    PRIMARY KEY,
  session_id   INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  status       TEXT    NOT NULL,
  error        TEXT    NULL,
  started_at   TEXT    NOT NULL,
  ended_at     TEXT    NULL
);
CREATE INDEX IF NOT EXISTS idx_runs_status ON runs(status);
CREATE INDEX IF NOT EXISTS idx_runs_session ON runs(session_id, started_at);
-- Results of a round's calls, each written as its call finishes; the round then moves them to
-- messages in call order. Rows left here belong to a round a crash cut short.
CREATE TABLE IF NOT EXISTS staged_tool_results (
  execution_id TEXT    NOT NULL REFERENCES runs(execution_id) ON DELETE CASCADE,
  tool_call_id TEXT    NOT NULL,
  content      TEXT    NULL,
  is_error     INTEGER NOT NULL DEFAULT 0,
  created_at   TEXT    NOT NULL,
  PRIMARY KEY (execution_id, tool_call_id)
);`,
  },
  // Binary parts of tool results (images, blobs, a budgeted result's full text), kept once by a
  // random id; messages and staged results refer to them as JSON `[{id, mediaType, bytes, name?}]`
  // instead of holding base64.
  {
    version: 4,
    sql: `CREATE TABLE IF NOT EXISTS attachments (
  id           TEXT    PRIMARY KEY,
  session_id   INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  execution_id TEXT    NULL,
  tool_call_id TEXT    NOT NULL,
  media_type   TEXT    NOT NULL,
  name         TEXT    NULL,
  bytes        INTEGER NOT NULL,
  data         BLOB    NOT NULL,
  created_at   TEXT    NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_attachments_session ON attachments(session_id);
ALTER TABLE messages ADD COLUMN attachments TEXT NULL;
ALTER TABLE staged_tool_results ADD COLUMN attachments TEXT NULL;`,
  },
  // Every event of a session, numbered from 1 in the order it was sent, as the JSON the WebSocket
  // sent (`seq` included): what a client that was away reads back (SessionEventLog). A rowid
  // table, not WITHOUT ROWID: a row can hold a whole tool result.
  {
    version: 5,
    sql: `CREATE TABLE IF NOT EXISTS session_events (
  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq        INTEGER NOT NULL,
  type       TEXT    NOT NULL,
  payload    TEXT    NOT NULL,
  created_at TEXT    NOT NULL,
  PRIMARY KEY (session_id, seq)
);
-- A user's sessions, newest first (GET /api/sessions) and by workspace name (DELETE).
CREATE INDEX IF NOT EXISTS idx_sessions_user ON sessions(user_id, id);`,
  },
  // Runs waiting for a person (an approval, a question, a desktop tool request): each wait as it
  // was created — the event the person was sent, who may answer, when it expires — so that the
  // run outlives its process. A row is removed when its wait ends; \`answer\` holds the answer of a
  // wait whose run has not resumed yet (JSON).
  {
    version: 6,
    sql: `CREATE TABLE IF NOT EXISTS pending_waits (
  request_id    TEXT    PRIMARY KEY,
  kind          TEXT    NOT NULL CHECK (kind IN ('approval', 'question', 'local_tool')),
  session_id    INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  execution_id  TEXT    NOT NULL REFERENCES runs(execution_id) ON DELETE CASCADE,
  tool_call_id  TEXT    NOT NULL,
  tool_name     TEXT    NOT NULL,
  arguments     TEXT    NOT NULL,
  owner_user_id INTEGER NOT NULL,
  event_type    TEXT    NOT NULL,
  event_data    TEXT    NOT NULL,
  created_at    INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,
  answer        TEXT    NULL
);
CREATE INDEX IF NOT EXISTS idx_pending_waits_session ON pending_waits(session_id, created_at);
CREATE INDEX IF NOT EXISTS idx_pending_waits_execution ON pending_waits(execution_id);`,
  },
  // The event log by batches: each row holds the events of one session that one group commit
  // stored — seq `first_seq` to `last_seq`, without a gap — as their JSON, one event a line
  // (JSON text never holds a raw newline). A round of a hundred tool calls is some five hundred
  // events: one row a commit instead of one an event costs a fifth of the time (SessionEventLog).
  {
    version: 7,
    sql: `CREATE TABLE IF NOT EXISTS session_event_batches (
  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  first_seq  INTEGER NOT NULL,
  last_seq   INTEGER NOT NULL,
  events     TEXT    NOT NULL,
  created_at TEXT    NOT NULL,
  PRIMARY KEY (session_id, first_seq)
);
INSERT INTO session_event_batches (session_id, first_seq, last_seq, events, created_at)
  SELECT session_id, seq, seq, payload, created_at FROM session_events;
DROP TABLE session_events;`,
  },
];

export interface HarnessDatabaseOptions {
  /** Clock for `created_at` / `updated_at`; tests pin it. */
  now?: () => Date;
  /** How long a write waits for another connection's lock before failing (default 5000 ms). */
  busyTimeoutMs?: number;
  /**
   * Longest a batched write waits for its commit while the server keeps writing, in ms (default
   * `DEFAULT_MAX_COMMIT_DELAY_MS`). See `batch`.
   */
  maxCommitDelayMs?: number;
  /**
   * Least time between two commits of the batch, in ms (default `DEFAULT_MIN_COMMIT_INTERVAL_MS`):
   * a batch whose writing paused right after the last commit waits this long for more.
   */
  minCommitIntervalMs?: number;
  /**
   * Schedules the end-of-turn check that commits the batch (default `setImmediate`: once the
   * current turn of the event loop is over). Tests run the checks themselves.
   */
  scheduleCheck?: (check: () => void) => void;
  /** Schedules a check after `ms` milliseconds (default `setTimeout`). Tests run it themselves. */
  scheduleCheckAfter?: (check: () => void, ms: number) => void;
  /** Milliseconds clock for `maxCommitDelayMs` (default `performance.now`). */
  clock?: () => number;
  /**
   * Where the WAL of a file database is checkpointed: `worker` (the default), from a worker
   * thread (`WalCheckpointer`), so that the event loop never waits for the disk syncs a checkpoint
   * makes; `inline`, by SQLite's automatic checkpoint inside the commit that fills the WAL.
   */
  walCheckpoints?: 'worker' | 'inline';
  logger?: { warn(message: string): void };
}

/** Default of `HarnessDatabaseOptions.maxCommitDelayMs`. */
export const DEFAULT_MAX_COMMIT_DELAY_MS = 4;

/** Default of `HarnessDatabaseOptions.minCommitIntervalMs`. */
export const DEFAULT_MIN_COMMIT_INTERVAL_MS = 1;

/**
 * WAL pages after which the server's own connection checkpoints (SQLite's `wal_autocheckpoint`)
 * when a worker thread checkpoints: a backstop well above what the thread lets pile up (about
 * 40 MB of WAL). SQLite's default, 1 000, applies when checkpoints are inline.
 */
const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;

/** Largest WAL file kept after a checkpoint resets it (SQLite's `journal_size_limit`, 64 MiB). */
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * The embedded SQLite store: one connection, schema created on open. The API is synchronous
 * (better-sqlite3), so a repository call never interleaves with another one.
 *
 * **Two kinds of write.** `transaction(fn)` is durable when it returns: the answer to an HTTP
 * request that created something may be sent at once. `batch(fn)` is for the writes of running
 * agents — results, activities, messages, the event log — which are only ever told to anybody
 * through WebSocket events: they join one open transaction that is committed at the end of the
 * event loop's turn, so a round of many tool calls costs one commit instead of one per row. The
 * WebSocket registry sends the turn's frames only after that commit (`afterCommit`): whatever a
 * client was told is committed.
 *
 * **Group commit.** The batch is committed at the end of a turn that wrote nothing new (the
 * writing paused), but no sooner than `minCommitIntervalMs` after the previous commit, and never
 * later than `maxCommitDelayMs` after the batch's first write. So an idle server commits a lone
 * write at once, a model streaming many small chunks, or many sessions at once, commit a few
 * hundred times a second rather than once per turn, and a frame waits `maxCommitDelayMs` at most.
 *
 * **Durability.** WAL with `synchronous=NORMAL`: a commit survives the process being killed or
 * crashing the moment it returns. Disks are synced at checkpoints only, so a power loss (or an
 * operating-system crash) may lose the transactions committed since the last checkpoint — up to
 * about half a second of work here (`WalCheckpointer`), never the file's consistency.
 */
export class HarnessDatabase {
  /** The underlying connection, for repositories to prepare their statements on. */
  readonly connection: Database.Database;
  private readonly clock: () => Date;
  private stampedAt = Number.NaN;
  private stamp = '';
  private readonly closeListeners: Array<() => void> = [];
  private readonly maxCommitDelayMs: number;
  private readonly minCommitIntervalMs: number;
  private readonly scheduleCheck: (check: () => void) => void;
  private readonly scheduleCheckAfter: (check: () => void, ms: number) => void;
  /** When the batch was last committed (`clock`), for `minCommitIntervalMs`. */
  private lastCommitAt = -Infinity;
  /** Whether a check is waiting for `minCommitIntervalMs` to pass. */
  private laterCheckScheduled = false;
  private readonly millis: () => number;
  private readonly logger: { warn(message: string): void };
  private checkpointer: WalCheckpointer | null = null;
  /** Whether the open transaction is the batch (and not a `transaction` in progress). */
  private batchOpen = false;
  /** When the oldest write not yet committed was made (`clock`), or `null` when there is none. */
  private pendingSince: number | null = null;
  /** How many `batch` callbacks are running (a `transaction` inside one is a savepoint of the batch). */
  private batchDepth = 0;
  /** Writes since the last check: a check that sees none commits. */
  private writesSinceCheck = 0;
  private checkScheduled = false;
  /** One-shot writers run at the next commit, inside the batch (the event log's queued rows). */
  private writers: Array<() => void> = [];
  /** One-shot callbacks run once everything written before them is committed. */
  private committed: Array<() => void> = [];
  private readonly statements: { begin: Statement; commit: Statement; rollback: Statement; savepoint: Statement; release: Statement; rollbackTo: Statement };

  /**
   * @param filename a file path (parent folders are created) or `:memory:` for a throw-away store.
   * @throws SchemaVersionError when the file was written by a newer schema.
   */
  constructor(filename: string, options: HarnessDatabaseOptions = {}) {
    this.clock = options.now ?? (() => new Date());
    this.maxCommitDelayMs = options.maxCommitDelayMs ?? DEFAULT_MAX_COMMIT_DELAY_MS;
    this.minCommitIntervalMs = options.minCommitIntervalMs ?? DEFAULT_MIN_COMMIT_INTERVAL_MS;
    this.scheduleCheck = options.scheduleCheck ?? ((check) => void setImmediate(check));
    this.scheduleCheckAfter = options.scheduleCheckAfter ?? ((check, ms) => void setTimeout(check, ms));
    this.millis = options.clock ?? (() => performance.now());
    this.logger = options.logger ?? console;
    const inMemory = filename === ':memory:' || filename === '';
    if (!inMemory) fs.mkdirSync(path.dirname(path.resolve(filename)), { recursive: true });
    this.connection = new Database(filename);
    try {
      this.configure(inMemory, options.busyTimeoutMs ?? 5000);
      this.migrate();
      if (!inMemory && (options.walCheckpoints ?? 'worker') === 'worker') this.startCheckpointer(path.resolve(filename));
    } catch (error) {
      this.connection.close();
      throw error;
    }
    const db = this.connection;
    this.statements = {
      begin: db.prepare('BEGIN'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT harness_write'),
      release: db.prepare('RELEASE harness_write'),
      rollbackTo: db.prepare('ROLLBACK TO harness_write'),
    };
  }

  /** Whether the connection is still open. */
  get open(): boolean {
    return this.connection.open;
  }

  /** The schema version stored in the file. */
  get schemaVersion(): number {
    return this.connection.pragma('user_version', { simple: true }) as number;
  }

  /** Whether batched writes are waiting for their commit. */
  get batchPending(): boolean {
    return this.batchOpen || this.writers.length > 0;
  }

  /** The current time as an ISO-8601 string, for `created_at` columns. */
  timestamp(): string {
    const now = this.clock();
    const millis = now.getTime();
    // Many rows are stamped within the same millisecond: the string is made once for it.
    if (millis !== this.stampedAt) {
      this.stampedAt = millis;
      this.stamp = now.toISOString();
    }
    return this.stamp;
  }

  /**
   * Runs `fn` in a transaction: everything it writes is committed together when it returns, or
   * nothing is if it throws (the error is rethrown). Batched writes made before are committed
   * first, so they stay in order. Called inside another transaction or a `batch`, it is a
   * savepoint of that one, committed with it.
   */
  transaction<T>(fn: () => T): T {
    if (this.connection.inTransaction) {
      if (!this.batchOpen || this.batchDepth > 0) return this.inSavepoint(fn);
      this.commitBatch();
    }
    return this.connection.transaction(fn)();
  }

  /**
   * Runs `fn` (synchronous) inside the open batch, opening one if there is none: what it writes
   * is written at once — every read on this connection sees it — and committed at the end of the
   * event loop's turn (group commit, see the class). Atomic: if `fn` throws, nothing it wrote
   * stays, and the error is rethrown. Inside a `transaction`, it is a savepoint of that one.
   *
   * A statement run outside `batch` and `transaction` while a batch is open joins the batch too:
   * writes whose effect is answered at once (HTTP) go through `transaction`.
   */
  batch<T>(fn: () => T): T {
    this.openBatch();
    if (this.batchOpen) this.noteWrite();
    this.batchDepth++;
    try {
      return this.inSavepoint(fn);
    } finally {
      this.batchDepth--;
    }
  }

  /**
   * `batch` for a function that runs one statement (which is atomic by itself): without the
   * savepoint `batch` wraps around a function, which costs about as much as the statement.
   */
  batchStatement<T>(run: () => T): T {
    this.openBatch();
    if (this.batchOpen) this.noteWrite();
    try {
      return run();
    } catch (error) {
      // An error such as a full disk may have ended the whole transaction.
      if (!this.connection.inTransaction) this.batchOpen = false;
      throw error;
    }
  }

  /**
   * Has `writer` run inside the batch just before it is committed (at once, with `commit`): for a
   * writer that queues rows in memory (the session event log) and writes them all at once, so
   * that a group commit writes them in a few statements. Counts as a write for the group commit.
   * `writer` writes through `batch`.
   */
  writeBeforeCommit(writer: () => void): void {
    this.pendingSince ??= this.millis();
    this.writers.push(writer);
    this.noteWrite();
  }

  /**
   * Calls `callback` once everything written so far is committed: at the end of this turn when
   * nothing is pending, else after the group commit (see the class). The WebSocket registry sends
   * a turn's frames from here. A callback that throws is logged.
   */
  afterCommit(callback: () => void): void {
    this.committed.push(callback);
    this.requestCheck();
  }

  /** Commits the open batch now, writing what is queued for it first. */
  commit(): void {
    this.runWriters();
    if (this.batchOpen) this.commitBatch();
    this.pendingSince = null;
  }

  /**
   * Gives back the memory of the connection's page cache (SQLite's `shrink_memory`). The cache
   * keeps the pages last read or written, up to 16 MB in better-sqlite3's build
   * (`SQLITE_DEFAULT_CACHE_SIZE=-16000`), and as the file grows with every session a burst of
   * runs fills more of it: the memory a server kept after each wave of sessions was mostly this.
   * Called when the server has gone idle; pages needed later are read again from the file (the
   * operating system's cache). Pages of an open transaction stay. Nothing happens once closed.
   */
  releaseMemory(): void {
    if (this.connection.open) this.connection.pragma('shrink_memory');
  }

  /**
   * Calls `listener` when `close` is called, before the connection closes: for a writer that
   * holds rows back (the session event log) to write them. A listener that throws does not stop
   * the close.
   */
  beforeClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  /** Commits what is pending and closes the connection; calling it again does nothing. */
  close(): void {
    if (!this.connection.open) return;
    for (const listener of this.closeListeners.splice(0)) {
      try {
        listener();
      } catch {
        // Closing must not fail: what the listener could not write is lost either way.
      }
    }
    try {
      this.commit();
    } catch (error) {
      this.logger.warn(`batched writes were lost at close: ${errorMessage(error)}`);
    }
    void this.checkpointer?.close();
    this.checkpointer = null;
    this.connection.close();
    this.runCommitted();
  }

  /** Opens the batch unless a transaction (the batch, or a `transaction` in progress) is open. */
  private openBatch(): void {
    if (this.connection.inTransaction) return;
    this.statements.begin.run();
    this.batchOpen = true;
    this.pendingSince ??= this.millis();
  }

  private noteWrite(): void {
    this.writesSinceCheck++;
    this.requestCheck();
  }

  private requestCheck(): void {
    if (this.checkScheduled) return;
    this.checkScheduled = true;
    this.scheduleCheck(() => this.check());
  }

  /**
   * The end of a turn: when what is pending is due (see the class), writes what the writers queued
   * into the batch and commits it; else looks again at the end of the next turn, or — when the
   * writing paused but the last commit is too recent — once `minCommitIntervalMs` has passed.
   * Runs the `afterCommit` callbacks once nothing waits to be committed.
   */
  private check(): void {
    this.checkScheduled = false;
    if (!this.connection.open) {
      this.writers = [];
      this.runCommitted();
      return;
    }
    const quiet = this.writesSinceCheck === 0;
    this.writesSinceCheck = 0;
    if (this.pendingSince !== null) {
      const now = this.millis();
      const due = now - this.pendingSince >= this.maxCommitDelayMs || (quiet && now - this.lastCommitAt >= this.minCommitIntervalMs);
      if (!due) {
        const wait = Math.min(this.lastCommitAt + this.minCommitIntervalMs, this.pendingSince + this.maxCommitDelayMs) - now;
        if (!quiet) this.requestCheck();
        else if (!this.laterCheckScheduled) {
          this.laterCheckScheduled = true;
          this.scheduleCheckAfter(() => {
            this.laterCheckScheduled = false;
            // A write since has scheduled a check of its own, which runs at once.
            if (!this.checkScheduled) this.check();
          }, Math.max(0, wait));
        }
        return;
      }
      this.runWriters();
      if (this.batchOpen) this.commitBatch();
      this.pendingSince = null;
    }
    this.runCommitted();
  }

  private runWriters(): void {
    if (this.writers.length === 0) return;
    const writers = this.writers;
    this.writers = [];
    for (const writer of writers) {
      try {
        writer();
      } catch (error) {
        this.logger.warn(`a batched write failed: ${errorMessage(error)}`);
      }
    }
  }

  private runCommitted(): void {
    if (this.committed.length === 0) return;
    const callbacks = this.committed;
    this.committed = [];
    for (const callback of callbacks) {
      try {
        callback();
      } catch (error) {
        this.logger.warn(`an after-commit callback failed: ${errorMessage(error)}`);
      }
    }
  }

  private commitBatch(): void {
    this.batchOpen = false;
    this.lastCommitAt = this.millis();
    // Writers still queued (a `transaction` commits the batch without them) keep their age.
    if (this.writers.length === 0) this.pendingSince = null;
    if (!this.connection.inTransaction) {
      // SQLite rolled the whole transaction back on an error such as a full disk.
      this.logger.warn('batched writes were lost: the database rolled their transaction back');
      return;
    }
    try {
      this.statements.commit.run();
    } catch (error) {
      this.logger.warn(`batched writes were lost: ${errorMessage(error)}`);
      if (this.connection.inTransaction) this.statements.rollback.run();
      return;
    }
    this.checkpointer?.noteCommit();
  }

  private inSavepoint<T>(fn: () => T): T {
    this.statements.savepoint.run();
    let result: T;
    try {
      result = fn();
    } catch (error) {
      // An error such as a full disk may have ended the whole transaction already.
      if (this.connection.inTransaction) {
        this.statements.rollbackTo.run();
        this.statements.release.run();
      } else {
        this.batchOpen = false;
      }
      throw error;
    }
    if (result instanceof Promise) {
      this.statements.rollbackTo.run();
      this.statements.release.run();
      throw new TypeError('a database write must be synchronous: the function returned a promise');
    }
    this.statements.release.run();
    return result;
  }

  private startCheckpointer(filename: string): void {
    try {
      this.checkpointer = new WalCheckpointer(filename, {
        logger: this.logger,
        onFailure: () => {
          if (this.connection.open) this.connection.pragma('wal_autocheckpoint = 1000');
        },
      });
    } catch (error) {
      this.logger.warn(`no checkpoint thread (${errorMessage(error)}); SQLite checkpoints the WAL on the event loop`);
      return;
    }
    this.connection.pragma(`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);
  }

  private configure(inMemory: boolean, busyTimeoutMs: number): void {
    // WAL lets HTTP reads proceed while a run writes; an in-memory store has no journal file.
    if (!inMemory) {
      this.connection.pragma('journal_mode = WAL');
      this.connection.pragma('synchronous = NORMAL');
      this.connection.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    }
    this.connection.pragma('foreign_keys = ON');
    this.connection.pragma(`busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`);
  }

  private migrate(): void {
    const found = this.schemaVersion;
    if (found > SCHEMA_VERSION) throw new SchemaVersionError(found, SCHEMA_VERSION);
    this.connection.transaction(() => {
      this.connection.exec(SCHEMA_V1);
      for (const migration of MIGRATIONS) {
        if (found < migration.version) this.connection.exec(migration.sql);
      }
      if (found < SCHEMA_VERSION) this.connection.pragma(`user_version = ${SCHEMA_VERSION}`);
    })();
  }
}
