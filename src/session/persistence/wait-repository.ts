import type { Statement } from 'better-sqlite3';
import type { StoredWait, WaitKind, WaitStore } from '../../harness/runtime/wait-store';
import type { HarnessDatabase } from './harness-database';

/** A stored wait, and the answer it got if its run has not resumed yet. */
export interface WaitRecord extends StoredWait {
  /** The answer (JSON value) given while the run was not running; `null` while unanswered. */
  answer: unknown;
}

/** Where the store reports writes it could not make. */
export interface WaitRepositoryLogger {
  warn(message: string): void;
}

interface WaitRow {
  request_id: string;
  kind: string;
  session_id: number;
  execution_id: string;
  tool_call_id: string;
  tool_name: string;
  arguments: string;
  owner_user_id: number;
  event_type: string;
  event_data: string;
  created_at: number;
  expires_at: number;
  answer: string | null;
}

/**
 * The pending waits of every run (`pending_waits`), the SQLite side of the harness's
 * `WaitStore`. A stop keeps them: once `keepAll` is called (the server is stopping), waits that
 * end only because the process goes away are not removed.
 */
export class WaitRepository implements WaitStore {
  private readonly insertStatement: Statement<unknown[]>;
  private readonly deleteStatement: Statement<[string]>;
  private readonly byIdStatement: Statement<[string], WaitRow>;
  private readonly byExecutionStatement: Statement<[string], WaitRow>;
  private readonly bySessionStatement: Statement<[number], WaitRow>;
  private readonly byOwnerStatement: Statement<[number], WaitRow>;
  private readonly answerStatement: Statement<[string, string]>;
  private readonly orphansStatement: Statement<[]>;
  private kept = false;

  constructor(
    private readonly database: HarnessDatabase,
    private readonly logger: WaitRepositoryLogger = console,
  ) {
    const db = database.connection;
    this.insertStatement = db.prepare(
      `INSERT OR REPLACE INTO pending_waits
         (request_id, kind, session_id, execution_id, tool_call_id, tool_name, arguments, owner_user_id, event_type, event_data, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.deleteStatement = db.prepare('DELETE FROM pending_waits WHERE request_id = ?');
    this.byIdStatement = db.prepare('SELECT * FROM pending_waits WHERE request_id = ?');
    this.byExecutionStatement = db.prepare('SELECT * FROM pending_waits WHERE execution_id = ? ORDER BY created_at, rowid');
    this.bySessionStatement = db.prepare('SELECT * FROM pending_waits WHERE session_id = ? ORDER BY created_at, rowid');
    this.byOwnerStatement = db.prepare('SELECT * FROM pending_waits WHERE owner_user_id = ? ORDER BY created_at, rowid');
    this.answerStatement = db.prepare('UPDATE pending_waits SET answer = ? WHERE request_id = ? AND answer IS NULL');
    this.orphansStatement = db.prepare(
      `DELETE FROM pending_waits WHERE execution_id NOT IN (SELECT execution_id FROM runs WHERE status IN ('running', 'waiting'))`,
    );
  }

  save(wait: StoredWait): void {
    this.write(`wait ${wait.requestId} was not stored`, () =>
      this.insertStatement.run(
        wait.requestId,
        wait.kind,
        wait.sessionId,
        wait.executionId,
        wait.toolCallId,
        wait.toolName,
        wait.argumentsJson,
        wait.ownerUserId,
        wait.eventType,
        JSON.stringify(wait.eventData),
        Math.trunc(wait.createdAt),
        Math.trunc(wait.expiresAt),
      ),
    );
  }

  /** Removes an ended wait; after `keepAll`, does nothing (the wait ended only because the server stops). */
  remove(requestId: string): void {
    if (this.kept) return;
    this.delete(requestId);
  }

  /** Removes a wait whatever `keepAll` said (its run resumed, or was cancelled). */
  delete(requestId: string): void {
    this.write(`wait ${requestId} was not removed`, () => this.deleteStatement.run(requestId));
  }

  /** From now on, `remove` keeps the waits: the server is stopping, and they must outlive it. */
  keepAll(): void {
    this.kept = true;
  }

  /** Records the answer of a stored wait; `false` if it is gone or already answered. */
  setAnswer(requestId: string, answer: unknown): boolean {
    return this.answerStatement.run(JSON.stringify(answer ?? null), requestId).changes === 1;
  }

  find(requestId: string): WaitRecord | null {
    const row = this.byIdStatement.get(requestId);
    return row ? toRecord(row) : null;
  }

  /** A run's waits, oldest first. */
  forExecution(executionId: string): WaitRecord[] {
    return this.byExecutionStatement.all(executionId).map(toRecord);
  }

  /** A session's waits, oldest first. */
  forSession(sessionId: number): WaitRecord[] {
    return this.bySessionStatement.all(sessionId).map(toRecord);
  }

  /** The waits a user may answer, oldest first. */
  forOwner(userId: number): WaitRecord[] {
    return this.byOwnerStatement.all(userId).map(toRecord);
  }

  /** Drops the waits of runs that are no longer unfinished; returns how many. */
  dropOrphans(): number {
    return this.orphansStatement.run().changes;
  }

  private write(failure: string, run: () => unknown): void {
    try {
      if (this.database.open) run();
    } catch (error) {
      this.logger.warn(`${failure}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

function toRecord(row: WaitRow): WaitRecord {
  return {
    requestId: row.request_id,
    kind: row.kind as WaitKind,
    sessionId: row.session_id,
    executionId: row.execution_id,
    toolCallId: row.tool_call_id,
    toolName: row.tool_name,
    argumentsJson: row.arguments,
    ownerUserId: row.owner_user_id,
    eventType: row.event_type,
    eventData: parseObject(row.event_data),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    answer: row.answer === null ? null : parseValue(row.answer),
  };
}

function parseValue(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return null;
  }
}

function parseObject(json: string): Record<string, unknown> {
  const value = parseValue(json);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
