import type { Statement } from 'better-sqlite3';
import type { HarnessDatabase } from './harness-database';

/**
 * How a run stands: `running` until it ends; `waiting` when a restart found it waiting for a
 * person (its stored waits) and it has not resumed yet; `interrupted` when the process stopped
 * before the run could end (found at the next start, or a server shutdown that cut it short).
 */
export type RunStatus = 'running' | 'waiting' | 'completed' | 'cancelled' | 'error' | 'max_rounds' | 'interrupted';

/** One run of a session, as stored. */
export interface RunRecord {
  executionId: string;
  sessionId: number;
  status: RunStatus;
  /** What ended the run, for `error`, `max_rounds` and `interrupted`. */
  error: string | null;
  /** ISO-8601. */
  startedAt: string;
  /** ISO-8601; null while the run is going. */
  endedAt: string | null;
}

interface RunRow {
  execution_id: string;
  session_id: number;
  status: string;
  error: string | null;
  started_at: string;
  ended_at: string | null;
}

/**
 * The runs of every session. A run is written when it starts, so a process that dies mid-run
 * leaves a `running` row behind: the next start finds it and closes the run it stands for.
 */
export class RunRepository {
  private readonly insertStatement: Statement<[string, number, string]>;
  private readonly endStatement: Statement<[string, string | null, string, string]>;
  private readonly byIdStatement: Statement<[string], RunRow>;
  private readonly runningStatement: Statement<[], RunRow>;
  private readonly markStatement: Statement<[string, string]>;

  constructor(private readonly database: HarnessDatabase) {
    const db = database.connection;
    this.insertStatement = db.prepare(`INSERT INTO runs (execution_id, session_id, status, started_at) VALUES (?, ?, 'running', ?)`);
    this.endStatement = db.prepare(`UPDATE runs SET status = ?, error = ?, ended_at = ? WHERE execution_id = ? AND status IN ('running', 'waiting')`);
    this.markStatement = db.prepare(`UPDATE runs SET status = ? WHERE execution_id = ? AND status IN ('running', 'waiting')`);
    this.byIdStatement = db.prepare('SELECT * FROM runs WHERE execution_id = ?');
    this.runningStatement = db.prepare(`SELECT * FROM runs WHERE status IN ('running', 'waiting') ORDER BY started_at`);
  }

  /** Records a run that starts now; durable when it returns (or with the transaction it is part of). */
  start(executionId: string, sessionId: number): void {
    this.database.transaction(() => this.insertStatement.run(executionId, sessionId, this.database.timestamp()));
  }

  /** Records that an unfinished run waits for a person (`waiting`), or goes on again (`running`). */
  mark(executionId: string, status: 'running' | 'waiting'): void {
    this.database.batchStatement(() => this.markStatement.run(status, executionId));
  }

  /**
   * Records how a running run ended; a run that has already ended keeps its first ending. Written
   * in the agent's batch, committed before the event that ends the run is sent.
   */
  end(executionId: string, status: Exclude<RunStatus, 'running' | 'waiting'>, error: string | null = null): void {
    this.database.batchStatement(() => this.endStatement.run(status, error, this.database.timestamp(), executionId));
  }

  find(executionId: string): RunRecord | null {
    const row = this.byIdStatement.get(executionId);
    return row ? toRecord(row) : null;
  }

  /** Runs that were started and never ended (`running` or `waiting`), oldest first. */
  listRunning(): RunRecord[] {
    return this.runningStatement.all().map(toRecord);
  }
}

function toRecord(row: RunRow): RunRecord {
  return {
    executionId: row.execution_id,
    sessionId: row.session_id,
    status: row.status as RunStatus,
    error: row.error,
    startedAt: row.started_at,
    endedAt: row.ended_at,
  };
}
