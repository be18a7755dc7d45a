import type { Statement } from 'better-sqlite3';
import { errorMessage } from '../../harness/runtime/error-message';
import type { HarnessDatabase } from './harness-database';

/** How many events a session keeps by default (`maxEventsPerSession`). */
export const DEFAULT_MAX_EVENTS_PER_SESSION = 10_000;

/**
 * An event of one session, as the WebSocket sends it (`WsEvent` with a session id), before it is
 * numbered.
 */
export interface SessionEventInput {
  type: string;
  sessionId: number;
  data: Record<string, unknown>;
  timestamp: number;
}

/** A numbered event: its `seq` and the JSON the WebSocket sends for it, `seq` included. */
export interface LoggedSessionEvent {
  seq: number;
  json: string;
}

export interface SessionEventLogOptions {
  /**
   * Most events kept per session (default `DEFAULT_MAX_EVENTS_PER_SESSION`). Past it, the oldest
   * are deleted a tenth of the bound at a time, so a long session does not pay a delete per event.
   */
  maxEventsPerSession?: number;
  logger?: { warn(message: string): void };
  /**
   * Schedules the write of what was appended (default: into the database's batch, just before its
   * group commit — `HarnessDatabase.writeBeforeCommit`): the events of every run streaming then
   * are written together, a few statements for many rows, and committed with the other writes.
   * Reads, and the database's close, write what is queued first, whatever this does.
   */
  schedule?: (write: () => void) => void;
}

/** The numbers of one session: the oldest event kept (0: none yet) and the last one given. */
interface SessionBounds {
  oldest: number;
  last: number;
}

interface QueuedEvent {
  sessionId: number;
  seq: number;
  type: string;
  json: string;
}

/** Rows one insert statement writes at most: one statement per row costs more than the row. */
const ROWS_PER_INSERT = 32;

/**
 * The event log of every session: each event a session's clients are sent gets the next number of
 * that session (`seq`, from 1, without gaps, continuing across restarts from the largest one
 * stored) and is kept, so that a client that was away reads what it missed, in order, exactly as
 * it would have received it.
 *
 * Appending is on the hot path of streaming: the number is given at once, and the row is written
 * with the others of the same turn of the event loop, into the database's batch (a commit costs
 * far more than a row: `HarnessDatabase.batch`). Reads write what is queued first, so they always
 * see every event numbered so far. `whenStored` tells when what was appended is committed: the
 * WebSocket registry sends frames only then.
 * The API is synchronous, as the database is: a read and the numbering of a new event never
 * interleave.
 *
 * If the store fails, the events of that write are lost from the log (a warning says how many);
 * their numbers are not given again.
 */
export class SessionEventLog {
  private readonly maxEventsPerSession: number;
  /** How many events a session keeps after a prune: the bound less one batch. */
  private readonly keptAfterPrune: number;
  private readonly logger: { warn(message: string): void };
  private readonly schedule: (write: () => void) => void;
  private readonly bounds = new Map<number, SessionBounds>();
  private queue: QueuedEvent[] = [];
  /** Per session, the oldest seq to keep, when a prune is due. */
  private readonly prunes = new Map<number, number>();
  private writeScheduled = false;
  private readonly insertStatement: Statement<[number, number, string, string, string]>;
  /** Inserts of 2 to `ROWS_PER_INSERT` rows, prepared as they are first needed. */
  private readonly multiInsertStatements = new Map<number, Statement<unknown[]>>();
  private readonly pruneStatement: Statement<[number, number]>;
  private readonly boundsStatement: Statement<[number], { oldest: number | null; last: number | null }>;
  private readonly pageStatement: Statement<[number, number, number], { seq: number; payload: string }>;

  constructor(
    private readonly database: HarnessDatabase,
    options: SessionEventLogOptions = {},
  ) {
    const max = options.maxEventsPerSession ?? DEFAULT_MAX_EVENTS_PER_SESSION;
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`maxEventsPerSession must be a positive integer, got ${String(max)}`);
    this.maxEventsPerSession = max;
    this.keptAfterPrune = Math.max(1, max - Math.max(1, Math.floor(max / 10)));
    this.logger = options.logger ?? console;
    this.schedule = options.schedule ?? ((write) => database.writeBeforeCommit(write));
    const db = database.connection;
    this.insertStatement = db.prepare('INSERT INTO session_events (session_id, seq, type, payload, created_at) VALUES (?, ?, ?, ?, ?)');
    this.pruneStatement = db.prepare('DELETE FROM session_events WHERE session_id = ? AND seq < ?');
    this.boundsStatement = db.prepare('SELECT MIN(seq) AS oldest, MAX(seq) AS last FROM session_events WHERE session_id = ?');
    this.pageStatement = db.prepare('SELECT seq, payload FROM session_events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?');
    database.beforeClose(() => this.flush());
  }

  /**
   * Gives the event the session's next number and queues it for the store. Returns the number
   * and the event's JSON — `{"type","sessionId","data","timestamp","seq"}` — which is what is
   * stored and what the caller sends.
   *
   * @throws when the session's numbers cannot be read (the first event of a session since start).
   */
  append(event: SessionEventInput): LoggedSessionEvent {
    const bounds = this.boundsOf(event.sessionId);
    const seq = bounds.last + 1;
    const json = JSON.stringify({ type: event.type, sessionId: event.sessionId, data: event.data, timestamp: event.timestamp, seq });
    bounds.last = seq;
    if (bounds.oldest === 0) bounds.oldest = seq;
    this.queue.push({ sessionId: event.sessionId, seq, type: event.type, json });
    if (seq - bounds.oldest + 1 > this.maxEventsPerSession) {
      bounds.oldest = seq - this.keptAfterPrune + 1;
      this.prunes.set(event.sessionId, bounds.oldest);
    }
    if (!this.writeScheduled) {
      this.writeScheduled = true;
      this.schedule(() => this.flush());
    }
    return { seq, json };
  }

  /**
   * The session's stored events numbered after `after`, oldest first, at most `limit`. Writes
   * what is queued first.
   */
  read(sessionId: number, after: number, limit: number): LoggedSessionEvent[] {
    this.flush();
    return this.pageStatement.all(sessionId, after, limit).map((row) => ({ seq: row.seq, json: row.payload }));
  }

  /**
   * Calls `callback` once every event appended so far is committed (or was lost, with a
   * warning): after the database's group commit (`HarnessDatabase.afterCommit`).
   */
  whenStored(callback: () => void): void {
    this.database.afterCommit(callback);
  }

  /**
   * The session's latest stored event of `type` whose `data.requestId` is `requestId` — a wait
   * for a person as it was first sent — or `null` when there is none (any more). Writes what is
   * queued first.
   */
  findRequest(sessionId: number, type: string, requestId: string): LoggedSessionEvent | null {
    this.flush();
    const row = this.database.connection
      .prepare<[number, string, string], { seq: number; payload: string }>(
        "SELECT seq, payload FROM session_events WHERE session_id = ? AND type = ? AND json_extract(payload, '$.data.requestId') = ? ORDER BY seq DESC LIMIT 1",
      )
      .get(sessionId, type, requestId);
    return row ? { seq: row.seq, json: row.payload } : null;
  }

  /** The last number given to an event of the session (0 if it has none). */
  lastSeq(sessionId: number): number {
    return this.boundsOf(sessionId).last;
  }

  /** Writes what is queued now. Never throws: a failed write is logged. */
  flush(): void {
    this.writeScheduled = false;
    if (this.queue.length === 0 && this.prunes.size === 0) return;
    const events = this.queue;
    const prunes = [...this.prunes];
    this.queue = [];
    this.prunes.clear();
    if (!this.database.open) {
      this.logger.warn(`${events.length} session event(s) were not stored: the database is closed`);
      return;
    }
    // Stored when written: the events of one write share their `created_at`.
    const createdAt = this.database.timestamp();
    try {
      this.database.batch(() => this.write(events, prunes, createdAt));
    } catch {
      // One row that cannot be written (its session was deleted meanwhile) must not cost the
      // others their place in the log: write them one by one.
      this.writeOneByOne(events, prunes, createdAt);
    }
  }

  private write(events: QueuedEvent[], prunes: Array<[number, number]>, createdAt: string): void {
    for (let start = 0; start < events.length; start += ROWS_PER_INSERT) {
      const rows = events.slice(start, start + ROWS_PER_INSERT);
      if (rows.length === 1) this.insert(rows[0], createdAt);
      else this.multiInsert(rows.length).run(rows.flatMap((event) => [event.sessionId, event.seq, event.type, event.json, createdAt]));
    }
    for (const [sessionId, oldest] of prunes) this.pruneStatement.run(sessionId, oldest);
  }

  private multiInsert(rows: number): Statement<unknown[]> {
    let statement = this.multiInsertStatements.get(rows);
    if (!statement) {
      const values = Array.from({ length: rows }, () => '(?, ?, ?, ?, ?)').join(', ');
      statement = this.database.connection.prepare(`INSERT INTO session_events (session_id, seq, type, payload, created_at) VALUES ${values}`);
      this.multiInsertStatements.set(rows, statement);
    }
    return statement;
  }

  private insert(event: QueuedEvent, createdAt: string): void {
    this.insertStatement.run(event.sessionId, event.seq, event.type, event.json, createdAt);
  }

  private writeOneByOne(events: QueuedEvent[], prunes: Array<[number, number]>, createdAt: string): void {
    let lost = 0;
    let reason = '';
    for (const event of events) {
      try {
        this.database.batchStatement(() => this.insert(event, createdAt));
      } catch (error) {
        lost++;
        reason = errorMessage(error);
      }
    }
    for (const [sessionId, oldest] of prunes) {
      try {
        this.database.batchStatement(() => this.pruneStatement.run(sessionId, oldest));
      } catch (error) {
        this.logger.warn(`old events of session ${sessionId} were not deleted: ${errorMessage(error)}`);
      }
    }
    if (lost > 0) this.logger.warn(`${lost} session event(s) were not stored: ${reason}`);
  }

  private boundsOf(sessionId: number): SessionBounds {
    let bounds = this.bounds.get(sessionId);
    if (!bounds) {
      const row = this.boundsStatement.get(sessionId);
      bounds = { oldest: row?.oldest ?? 0, last: row?.last ?? 0 };
      this.bounds.set(sessionId, bounds);
    }
    return bounds;
  }
}
