import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SchemaVersionError } from './persistence-errors';

/** The schema this build writes; stored in `PRAGMA user_version`. Later migrations step it up. */
export const SCHEMA_VERSION = 6;

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
];

export interface HarnessDatabaseOptions {
  /** Clock for `created_at` / `updated_at`; tests pin it. */
  now?: () => Date;
  /** How long a write waits for another connection's lock before failing (default 5000 ms). */
  busyTimeoutMs?: number;
}

/**
 * The embedded SQLite store: one connection, schema created on open. The API is synchronous
 * (better-sqlite3), so a repository call never interleaves with another one.
 */
export class HarnessDatabase {
  /** The underlying connection, for repositories to prepare their statements on. */
  readonly connection: Database.Database;
  private readonly clock: () => Date;
  private readonly closeListeners: Array<() => void> = [];

  /**
   * @param filename a file path (parent folders are created) or `:memory:` for a throw-away store.
   * @throws SchemaVersionError when the file was written by a newer schema.
   */
  constructor(filename: string, options: HarnessDatabaseOptions = {}) {
    this.clock = options.now ?? (() => new Date());
    const inMemory = filename === ':memory:' || filename === '';
    if (!inMemory) fs.mkdirSync(path.dirname(path.resolve(filename)), { recursive: true });
    this.connection = new Database(filename);
    try {
      this.configure(inMemory, options.busyTimeoutMs ?? 5000);
      this.migrate();
    } catch (error) {
      this.connection.close();
      throw error;
    }
  }

  /** Whether the connection is still open. */
  get open(): boolean {
    return this.connection.open;
  }

  /** The schema version stored in the file. */
  get schemaVersion(): number {
    return this.connection.pragma('user_version', { simple: true }) as number;
  }

  /** The current time as an ISO-8601 string, for `created_at` columns. */
  timestamp(): string {
    return this.clock().toISOString();
  }

  /**
   * Runs `fn` in a transaction: everything it writes is committed together, or nothing is if it
   * throws (the error is rethrown). Nested calls become savepoints of the outer transaction.
   */
  transaction<T>(fn: () => T): T {
    return this.connection.transaction(fn)();
  }

  /**
   * Calls `listener` when `close` is called, before the connection closes: for a writer that
   * holds rows back (the session event log) to write them. A listener that throws does not stop
   * the close.
   */
  beforeClose(listener: () => void): void {
    this.closeListeners.push(listener);
  }

  /** Closes the connection; calling it again does nothing. */
  close(): void {
    if (!this.connection.open) return;
    for (const listener of this.closeListeners.splice(0)) {
      try {
        listener();
      } catch {
        // Closing must not fail: what the listener could not write is lost either way.
      }
    }
    this.connection.close();
  }

  private configure(inMemory: boolean, busyTimeoutMs: number): void {
    // WAL lets HTTP reads proceed while a run writes; an in-memory store has no journal file.
    if (!inMemory) {
      this.connection.pragma('journal_mode = WAL');
      this.connection.pragma('synchronous = NORMAL');
    }
    this.connection.pragma('foreign_keys = ON');
    this.connection.pragma(`busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`);
  }

  private migrate(): void {
    const found = this.schemaVersion;
    if (found > SCHEMA_VERSION) throw new SchemaVersionError(found, SCHEMA_VERSION);
    this.transaction(() => {
      this.connection.exec(SCHEMA_V1);
      for (const migration of MIGRATIONS) {
        if (found < migration.version) this.connection.exec(migration.sql);
      }
      if (found < SCHEMA_VERSION) this.connection.pragma(`user_version = ${SCHEMA_VERSION}`);
    });
  }
}
