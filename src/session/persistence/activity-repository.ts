import type { Statement } from 'better-sqlite3';
import { isPlainObject } from '../../harness/tool/tool-arguments';
import type { HarnessDatabase } from './harness-database';
import { InvalidRecordError } from './persistence-errors';
import { toWellFormed } from './well-formed-text';

export type ActivityStatus = 'SUCCESS' | 'ERROR';

const ACTIVITY_STATUSES: readonly ActivityStatus[] = ['SUCCESS', 'ERROR'];

/** One tool call as the audit trail keeps it. */
export interface ActivityRecord {
  id: number;
  sessionId: number;
  executionId: string | null;
  toolCallId: string;
  toolName: string;
  /** `file_read`, `file_write`, `search`, `command`, `task`, `question`, `mcp` or `tool`. */
  type: string;
  /** What the call acted on: a path, a pattern, a command… */
  target: string;
  /** A short human line. */
  summary: string;
  status: ActivityStatus;
  /** Further audit details (e.g. `durationMs`, `errorMessage`); new fields need no schema change. */
  metadata: Record<string, unknown>;
  /** ISO-8601. */
  createdAt: string;
}

export interface RecordActivityInput {
  sessionId: number;
  executionId?: string | null;
  toolCallId: string;
  toolName: string;
  type: string;
  target: string;
  summary: string;
  status: ActivityStatus;
  metadata?: Record<string, unknown>;
}

interface ActivityRow {
  id: number;
  session_id: number;
  execution_id: string | null;
  tool_call_id: string;
  tool_name: string;
  type: string;
  target: string;
  summary: string;
  status: string;
  metadata: string;
  created_at: string;
}

type InsertParameters = [number, string | null, string, string, string, string, string, string, string, string];

/** The audit trail of a session's tool calls. */
export class ActivityRepository {
  private readonly insertStatement: Statement<InsertParameters>;
  private readonly bySessionStatement: Statement<[number], ActivityRow>;

  constructor(private readonly database: HarnessDatabase) {
    const db = database.connection;
    this.insertStatement = db.prepare(
      `INSERT INTO activities
         (session_id, execution_id, tool_call_id, tool_name, type, target, summary, status, metadata, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.bySessionStatement = db.prepare('SELECT * FROM activities WHERE session_id = ? ORDER BY id');
  }

  /**
   * Records one tool call. Metadata that cannot be written as a JSON object (a cycle, a BigInt,
   * not an object at all) is stored as `{}`: the activity itself is never lost for its details.
   * Text is stored well-formed (a lone UTF-16 surrogate becomes U+FFFD). The returned record
   * holds what was stored.
   * @throws InvalidRecordError for a status other than SUCCESS / ERROR; the database's error for
   * a missing session.
   */
  record(input: RecordActivityInput): ActivityRecord {
    if (!(ACTIVITY_STATUSES as readonly unknown[]).includes(input.status)) {
      throw new InvalidRecordError('status', input.status, ACTIVITY_STATUSES);
    }
    const metadata = serializeMetadata(input.metadata);
    const createdAt = this.database.timestamp();
    const [toolCallId, toolName, type, target, summary] = [input.toolCallId, input.toolName, input.type, input.target, input.summary].map(toWellFormed);
    // In the agent's batch: the activity is told through its event, sent after the commit.
    const { lastInsertRowid } = this.database.batchStatement(() =>
      this.insertStatement.run(
        input.sessionId,
        input.executionId ?? null,
        toolCallId,
        toolName,
        type,
        target,
        summary,
        input.status,
        metadata,
        createdAt,
      ),
    );
    return {
      id: Number(lastInsertRowid),
      sessionId: input.sessionId,
      executionId: input.executionId ?? null,
      toolCallId,
      toolName,
      type,
      target,
      summary,
      status: input.status,
      metadata: readMetadata(metadata),
      createdAt,
    };
  }

  /** The session's activities in the order they were recorded. */
  listBySession(sessionId: number): ActivityRecord[] {
    return this.bySessionStatement.all(sessionId).map(toRecord);
  }
}

function serializeMetadata(metadata: unknown): string {
  if (!isPlainObject(metadata)) return '{}';
  // Only a `toJSON` of the object itself can make it something else than an object; without one
  // (the listener's details) its JSON is an object's.
  if (!('toJSON' in metadata)) {
    try {
      return JSON.stringify(metadata);
    } catch {
      return '{}';
    }
  }
  try {
    const json = JSON.stringify(metadata);
    // A toJSON() may turn the object into something else.
    return isPlainObject(JSON.parse(json)) ? json : '{}';
  } catch {
    return '{}';
  }
}

function toRecord(row: ActivityRow): ActivityRecord {
  return {
    id: row.id,
    sessionId: row.session_id,
    executionId: row.execution_id,
    toolCallId: row.tool_call_id,
    toolName: row.tool_name,
    type: row.type,
    target: row.target,
    summary: row.summary,
    status: row.status as ActivityStatus,
    metadata: readMetadata(row.metadata),
    createdAt: row.created_at,
  };
}

function readMetadata(json: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(json);
    return isPlainObject(value) ? value : {};
  } catch {
    return {};
  }
}
