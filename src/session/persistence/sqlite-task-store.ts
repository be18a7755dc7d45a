import type { Statement } from 'better-sqlite3';
import { TASK_STATUSES, type TaskItem, type TaskStatus, type TaskStore } from '../../harness/tool/impl/task-store';
import type { HarnessDatabase } from './harness-database';
import { InvalidRecordError } from './persistence-errors';

interface TaskRow {
  id: number;
  session_id: number;
  title: string;
  description: string;
  status: string;
  created_at: string;
  updated_at: string;
}

/**
 * The task tools' todo lists, kept in SQLite. Ids are unique in the database, but every operation
 * is scoped by session: another session's task id is "not found", never read or changed.
 */
export class SqliteTaskStore implements TaskStore {
  private readonly insertStatement: Statement<[number, string, string, string, string, string]>;
  private readonly findStatement: Statement<[number, number], TaskRow>;
  private readonly updateStatement: Statement<[string | null, string | null, string | null, string, number, number]>;
  private readonly listStatement: Statement<[number], TaskRow>;
  private readonly deleteStatement: Statement<[number, number]>;

  constructor(private readonly database: HarnessDatabase) {
    const db = database.connection;
    this.insertStatement = db.prepare(
      `INSERT INTO tasks (session_id, title, description, status, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.findStatement = db.prepare('SELECT * FROM tasks WHERE id = ? AND session_id = ?');
    this.updateStatement = db.prepare(
      `UPDATE tasks
          SET title = COALESCE(?, title), description = COALESCE(?, description),
              status = COALESCE(?, status), updated_at = ?
        WHERE id = ? AND session_id = ?`,
    );
    this.listStatement = db.prepare('SELECT * FROM tasks WHERE session_id = ? ORDER BY id');
    this.deleteStatement = db.prepare('DELETE FROM tasks WHERE id = ? AND session_id = ?');
  }

  /** @throws InvalidRecordError for an unknown status; the database's error for a missing session. */
  create(sessionId: number, input: { title: string; description?: string; status?: TaskStatus }): TaskItem {
    const status = input.status ?? 'pending';
    assertStatus(status);
    const now = this.database.timestamp();
    // Written in the agent's batch: a task is only ever told through the run's events.
    return this.database.batchStatement(() => {
      const { lastInsertRowid } = this.insertStatement.run(sessionId, input.title, input.description ?? '', status, now, now);
      return toItem(this.findStatement.get(Number(lastInsertRowid), sessionId) as TaskRow);
    });
  }

  /** @throws InvalidRecordError for an unknown status. */
  update(
    sessionId: number,
    taskId: number,
    changes: { title?: string; description?: string; status?: TaskStatus },
  ): TaskItem | undefined {
    if (changes.status !== undefined) assertStatus(changes.status);
    return this.database.batchStatement(() => {
      const { changes: updated } = this.updateStatement.run(
        changes.title ?? null,
        changes.description ?? null,
        changes.status ?? null,
        this.database.timestamp(),
        taskId,
        sessionId,
      );
      if (updated === 0) return undefined;
      const row = this.findStatement.get(taskId, sessionId);
      return row && toItem(row);
    });
  }

  list(sessionId: number): TaskItem[] {
    return this.listStatement.all(sessionId).map(toItem);
  }

  delete(sessionId: number, taskId: number): boolean {
    return this.database.batchStatement(() => this.deleteStatement.run(taskId, sessionId).changes > 0);
  }
}

function assertStatus(status: unknown): void {
  if (!(TASK_STATUSES as readonly unknown[]).includes(status)) throw new InvalidRecordError('status', status, TASK_STATUSES);
}

function toItem(row: TaskRow): TaskItem {
  return {
    id: row.id,
    sessionId: row.session_id,
    title: row.title,
    description: row.description,
    status: (TASK_STATUSES as readonly string[]).includes(row.status) ? (row.status as TaskStatus) : 'pending',
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
