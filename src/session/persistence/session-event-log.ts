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

/** The events of one session appended since the last write: seq `first` to `last`, without a gap. */
interface PendingBatch {
  sessionId: number;
  first: number;
  last: number;
  /** Each event's JSON, in seq order. */
  lines: string[];
}

/** A stored row: a session's events `first_seq` to `last_seq`, one JSON a line. */
interface BatchRow {
  first_seq: number;
  events: string;
}

/** Between two events of a stored batch: JSON text never holds a raw newline. */
const LINE = '\n';

/**
 * The event log of every session: each event a session's clients are sent gets the next number of
 * that session (`seq`, from 1, without gaps, continuing across restarts from the largest one
 * stored) and is kept, so that a client that was away reads what it missed, in order, exactly as
 * it would have received it.
 *
 * Appending is on the hot path of streaming: the number is given at once, and the event is written
 * with the others of its session from the same turns of the event loop, into the database's batch
 * (a commit costs far more than a row: `HarnessDatabase.batch`). They are stored as one row, the
 * events' JSON one a line (table `session_event_batches`): a round of many tool calls makes
 * hundreds of small events, and a row each cost more than the events themselves. Reads write what
 * is queued first, so they always see every event numbered so far. `whenStored` tells when what
 * was appended is committed: the WebSocket registry sends frames only then.
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
  /** What each session appended since the last write, in the order the sessions first appended. */
  private pending = new Map<number, PendingBatch>();
  /** Per session, the oldest seq to keep, when a prune is due. */
  private readonly prunes = new Map<number, number>();
  private writeScheduled = false;
  private readonly insertStatement: Statement<[number, number, number, string, string]>;
  private readonly deleteBelowStatement: Statement<[number, number, number]>;
  private readonly straddlingStatement: Statement<[number, number], BatchRow>;
  private readonly trimStatement: Statement<[number, string, number, number]>;
  private readonly boundsStatement: Statement<[number, number], { oldest: number | null; last: number | null }>;
  private readonly pageStatement: Statement<[number, number, number], BatchRow>;
  private readonly requestStatement: Statement<[number, string], BatchRow>;

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
    this.insertStatement = db.prepare('INSERT INTO session_event_batches (session_id, first_seq, last_seq, events, created_at) VALUES (?, ?, ?, ?, ?)');
    this.deleteBelowStatement = db.prepare('DELETE FROM session_event_batches WHERE session_id = ? AND first_seq < ? AND last_seq < ?');
    this.straddlingStatement = db.prepare('SELECT first_seq, events FROM session_event_batches WHERE session_id = ? AND first_seq < ? ORDER BY first_seq DESC LIMIT 1');
    this.trimStatement = db.prepare('UPDATE session_event_batches SET first_seq = ?, events = ? WHERE session_id = ? AND first_seq = ?');
    this.boundsStatement = db.prepare(
      'SELECT MIN(first_seq) AS oldest, (SELECT last_seq FROM session_event_batches WHERE session_id = ? ORDER BY first_seq DESC LIMIT 1) AS last FROM session_event_batches WHERE session_id = ?',
    );
    // From the batch that holds the event after `after` (the last one that starts at or before it) on.
    this.pageStatement = db.prepare(
      `SELECT first_seq, events FROM session_event_batches
       WHERE session_id = ? AND first_seq >= COALESCE((SELECT MAX(first_seq) FROM session_event_batches WHERE session_id = ? AND first_seq <= ?), 0)
       ORDER BY first_seq`,
    );
    this.requestStatement = db.prepare('SELECT first_seq, events FROM session_event_batches WHERE session_id = ? AND instr(events, ?) > 0 ORDER BY first_seq DESC');
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
    const json = eventJson(event, seq);
    bounds.last = seq;
    if (bounds.oldest === 0) bounds.oldest = seq;
    const batch = this.pending.get(event.sessionId);
    if (batch) {
      batch.last = seq;
      batch.lines.push(json);
    } else {
      this.pending.set(event.sessionId, { sessionId: event.sessionId, first: seq, last: seq, lines: [json] });
    }
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
    const events: LoggedSessionEvent[] = [];
    if (limit <= 0) return events;
    for (const row of this.pageStatement.iterate(sessionId, sessionId, after + 1)) {
      const lines = row.events.split(LINE);
      for (let index = Math.max(0, after + 1 - row.first_seq); index < lines.length; index++) {
        events.push({ seq: row.first_seq + index, json: lines[index] });
        // Leaving the loop ends the statement (`iterate` returns).
        if (events.length === limit) return events;
      }
    }
    return events;
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
    const quoted = JSON.stringify(requestId);
    for (const row of this.requestStatement.iterate(sessionId, quoted)) {
      const lines = row.events.split(LINE);
      for (let index = lines.length - 1; index >= 0; index--) {
        if (!lines[index].includes(quoted)) continue;
        const event = JSON.parse(lines[index]) as { type?: unknown; data?: { requestId?: unknown } };
        if (event.type === type && event.data?.requestId === requestId) return { seq: row.first_seq + index, json: lines[index] };
      }
    }
    return null;
  }

  /** The last number given to an event of the session (0 if it has none). */
  lastSeq(sessionId: number): number {
    return this.boundsOf(sessionId).last;
  }

  /** Writes what is queued now. Never throws: a failed write is logged. */
  flush(): void {
    this.writeScheduled = false;
    if (this.pending.size === 0 && this.prunes.size === 0) return;
    const batches = [...this.pending.values()];
    const prunes = [...this.prunes];
    this.pending = new Map();
    this.prunes.clear();
    if (!this.database.open) {
      this.logger.warn(`${countEvents(batches)} session event(s) were not stored: the database is closed`);
      return;
    }
    // Stored when written: the events of one write share their `created_at`.
    const createdAt = this.database.timestamp();
    try {
      this.database.batch(() => {
        for (const batch of batches) this.insert(batch, createdAt);
        for (const [sessionId, oldest] of prunes) this.prune(sessionId, oldest);
      });
    } catch {
      // One session whose events cannot be written (it was deleted meanwhile) must not cost the
      // others their place in the log: write them one session at a time.
      this.writeOneByOne(batches, prunes, createdAt);
    }
  }

  private insert(batch: PendingBatch, createdAt: string): void {
    this.insertStatement.run(batch.sessionId, batch.first, batch.last, batch.lines.join(LINE), createdAt);
  }

  /** Deletes the session's events numbered below `oldest`, cutting the batch that holds both kinds. */
  private prune(sessionId: number, oldest: number): void {
    this.deleteBelowStatement.run(sessionId, oldest, oldest);
    const straddling = this.straddlingStatement.get(sessionId, oldest);
    if (!straddling) return;
    let cut = -1;
    for (let dropped = 0; dropped < oldest - straddling.first_seq; dropped++) cut = straddling.events.indexOf(LINE, cut + 1);
    this.trimStatement.run(oldest, straddling.events.slice(cut + 1), sessionId, straddling.first_seq);
  }

  private writeOneByOne(batches: PendingBatch[], prunes: Array<[number, number]>, createdAt: string): void {
    let lost = 0;
    let reason = '';
    for (const batch of batches) {
      try {
        this.database.batchStatement(() => this.insert(batch, createdAt));
      } catch (error) {
        lost += batch.lines.length;
        reason = errorMessage(error);
      }
    }
    for (const [sessionId, oldest] of prunes) {
      try {
        this.database.batch(() => this.prune(sessionId, oldest));
      } catch (error) {
        this.logger.warn(`old events of session ${sessionId} were not deleted: ${errorMessage(error)}`);
      }
    }
    if (lost > 0) this.logger.warn(`${lost} session event(s) were not stored: ${reason}`);
  }

  private boundsOf(sessionId: number): SessionBounds {
    let bounds = this.bounds.get(sessionId);
    if (!bounds) {
      const row = this.boundsStatement.get(sessionId, sessionId);
      bounds = { oldest: row?.oldest ?? 0, last: row?.last ?? 0 };
      this.bounds.set(sessionId, bounds);
    }
    return bounds;
  }
}

/**
 * `JSON.stringify({ type, sessionId, data, timestamp, seq })`, the same text, put together from
 * the JSON of its parts: the envelope of every event is built here, and stringifying it as an
 * object cost a third more than its data alone. Anything that the parts' JSON would not write as
 * `JSON.stringify` does (a number that is not finite, data that is not an object) takes the slow way.
 */
export function eventJson(event: SessionEventInput, seq: number): string {
  const { type, sessionId, data, timestamp } = event;
  if (!Number.isFinite(sessionId) || !Number.isFinite(timestamp) || typeof data !== 'object' || data === null) {
    return JSON.stringify({ type, sessionId, data, timestamp, seq });
  }
  return `{"type":${JSON.stringify(type)},"sessionId":${sessionId},"data":${JSON.stringify(data)},"timestamp":${timestamp},"seq":${seq}}`;
}

function countEvents(batches: PendingBatch[]): number {
  return batches.reduce((sum, batch) => sum + batch.lines.length, 0);
}
