import type { Statement } from 'better-sqlite3';
import type { ChatAttachment, ChatImage, ChatMessage, ChatRole, ToolCall } from '../../harness/llm/chat-request';
import type { AttachmentStore } from '../../harness/tool/attachment-store';
import { parseAttachmentRefs, serializeAttachmentRefs } from './attachment-refs';
import type { HarnessDatabase } from './harness-database';
import { InvalidRecordError } from './persistence-errors';
import { SqliteAttachmentStore } from './sqlite-attachment-store';
import { toWellFormed } from './well-formed-text';
import { errorMessage } from '../../harness/runtime/error-message';

const CHAT_ROLES: readonly ChatRole[] = ['system', 'user', 'assistant', 'tool'];

/** A stored conversation message, shaped like the `GET /api/sessions/:id/messages` answer. */
export interface MessageRecord {
  id: number;
  sessionId: number;
  /** The run that produced the message; `null` for messages written outside a run. */
  executionId: string | null;
  role: ChatRole;
  /** Exactly the text the model saw or wrote; `null` for a tool-calls-only assistant message. */
  content: string | null;
  /** Present on assistant messages that called tools. */
  toolCalls?: ToolCall[];
  /** Present on tool messages: the call this message answers. */
  toolCallId?: string;
  /** Present (true) on tool messages of calls that failed. */
  isError?: boolean;
  /** Present on tool messages whose result had binary parts: references to the stored attachments. */
  attachments?: ChatAttachment[];
  /** ISO-8601. */
  createdAt: string;
}

/** A tool result staged by a running round, by its call id. */
export interface StagedToolResult {
  content: string | null;
  isError: boolean;
  /** Present when the result had stored attachments. */
  attachments?: ChatAttachment[];
}

interface MessageRow {
  id: number;
  session_id: number;
  execution_id: string | null;
  role: string;
  content: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  is_error: number;
  attachments: string | null;
  created_at: string;
}

interface StagedRow {
  execution_id: string;
  tool_call_id: string;
  content: string | null;
  is_error: number;
  attachments: string | null;
}

/** Rows one insert statement writes at most. */
const ROWS_PER_INSERT = 32;

/** A staged result as its row's values: run, call, content, is_error, attachments, created_at. */
type StagedRowValues = [string, string, string | null, number, string | null, string];

type InsertParameters = [number, string | null, string, string | null, string | null, string | null, number, string | null, string];

/**
 * A session's conversation, in the order it happened. Content is stored as given: no trimming and
 * no re-serialisation, so a tool message holds the very string the model saw. (SQLite keeps text
 * as UTF-8, which cannot hold a lone UTF-16 surrogate; such a code unit is stored as one U+FFFD,
 * as a UTF-8 HTTP answer would carry it.)
 *
 * Not stored: `name`, `reasoning_content` and `images` of a {@link ChatMessage}. `toChatMessages`
 * restores a tool message's `name` from the call it answers, and its `images` from its image
 * attachments, read back from the attachment store: messages keep attachment references
 * (`attachments`), never base64.
 */
export class MessageRepository {
  private readonly insertStatement: Statement<InsertParameters>;
  private readonly bySessionStatement: Statement<[number], MessageRow>;
  private readonly stageStatement: Statement<StagedRowValues>;
  private readonly stagedStatement: Statement<[string], StagedRow>;
  private readonly clearStagedStatement: Statement<[string]>;
  /** Staged results not written yet, by run and call (see `stageToolResult`). */
  private unwritten = new Map<string, Map<string, StagedRowValues>>();
  /** Inserts of 2 to `ROWS_PER_INSERT` messages, prepared as they are first needed. */
  private readonly multiInsertStatements = new Map<number, Statement<unknown[]>>();
  private writeScheduled = false;

  /**
   * @param attachments where `toChatMessages` reads the images of tool messages back from; by
   * default the database's own attachments table.
   * @param logger where a staged result that could not be written is reported.
   */
  constructor(
    private readonly database: HarnessDatabase,
    private readonly attachments: AttachmentStore = new SqliteAttachmentStore(database),
    private readonly logger: { warn(message: string): void } = console,
  ) {
    const db = database.connection;
    this.insertStatement = db.prepare(
      `INSERT INTO messages (session_id, execution_id, role, content, tool_calls, tool_call_id, is_error, attachments, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.bySessionStatement = db.prepare('SELECT * FROM messages WHERE session_id = ? ORDER BY id');
    this.stageStatement = db.prepare(
      `INSERT OR REPLACE INTO staged_tool_results (execution_id, tool_call_id, content, is_error, attachments, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.stagedStatement = db.prepare('SELECT * FROM staged_tool_results WHERE execution_id = ?');
    this.clearStagedStatement = db.prepare('DELETE FROM staged_tool_results WHERE execution_id = ?');
  }

  /**
   * Keeps the result of one call of a running round as the call finishes, so that a process that
   * dies before the round ends does not lose it. `appendRound` moves the round's results into the
   * conversation in call order; a run's start-up recovery reads what is left.
   *
   * The row is written with the database's next group commit (`writeBeforeCommit`): results that
   * finish together share one commit, which comes before any event about them is sent. A round
   * appended before that commit writes its tool messages instead, and the staged rows are never
   * written at all (they would be deleted in the same transaction). A failure to write is logged.
   */
  stageToolResult(executionId: string, message: ChatMessage): void {
    if (message.role !== 'tool' || message.tool_call_id === undefined) throw new InvalidRecordError('role', message.role, ['tool']);
    const row: StagedRowValues = [
      executionId,
      message.tool_call_id,
      message.content == null ? null : toWellFormed(message.content),
      message.is_error === true ? 1 : 0,
      serializeAttachmentRefs(message.attachments),
      this.database.timestamp(),
    ];
    let calls = this.unwritten.get(executionId);
    if (!calls) {
      calls = new Map();
      this.unwritten.set(executionId, calls);
    }
    calls.set(message.tool_call_id, row);
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    this.database.writeBeforeCommit(() => this.writeStaged());
  }

  /** The results a run has staged and not yet appended, by tool call id. */
  stagedToolResults(executionId: string): Map<string, StagedToolResult> {
    this.writeStaged();
    return new Map(
      this.stagedStatement.all(executionId).map((row) => {
        const staged: StagedToolResult = { content: row.content, isError: row.is_error === 1 };
        const attachments = parseAttachmentRefs(row.attachments);
        if (attachments.length > 0) staged.attachments = attachments;
        return [row.tool_call_id, staged];
      }),
    );
  }

  /**
   * Appends a batch of a run's messages and drops what the run had staged, atomically, in the
   * agent's batch (`HarnessDatabase.batch`).
   */
  appendRound(sessionId: number, executionId: string, messages: readonly ChatMessage[]): MessageRecord[] {
    // Results staged since the last commit need not be written: the round's messages hold them.
    this.unwritten.delete(executionId);
    return this.database.batch(() => {
      const records = this.insertMany(sessionId, executionId, messages);
      this.clearStagedStatement.run(executionId);
      return records;
    });
  }

  /**
   * Appends one message, in the agent's batch (inside a `transaction`, as part of it).
   * @throws InvalidRecordError for an unknown role; the database's error for a missing session.
   */
  append(sessionId: number, executionId: string | null, message: ChatMessage): MessageRecord {
    return this.database.batchStatement(() => this.insert(sessionId, executionId, message));
  }

  /** Appends all messages atomically, in the agent's batch: if one cannot be written, none is. */
  appendMany(sessionId: number, executionId: string | null, messages: readonly ChatMessage[]): MessageRecord[] {
    return this.database.batch(() => this.insertMany(sessionId, executionId, messages));
  }

  /** Writes the staged results not yet written, each on its own: one that cannot be written costs no other. */
  private writeStaged(): void {
    this.writeScheduled = false;
    if (this.unwritten.size === 0) return;
    const unwritten = this.unwritten;
    this.unwritten = new Map();
    for (const calls of unwritten.values()) {
      for (const row of calls.values()) {
        try {
          this.database.batchStatement(() => this.stageStatement.run(...row));
        } catch (error) {
          this.logger.warn(`tool result ${row[1]} of run ${row[0]} was not staged: ${errorMessage(error)}`);
        }
      }
    }
  }

  private insert(sessionId: number, executionId: string | null, message: ChatMessage): MessageRecord {
    const row = this.rowOf(sessionId, executionId, message);
    const { lastInsertRowid } = this.insertStatement.run(...row);
    return recordOf(Number(lastInsertRowid), row, message);
  }

  /** Appends messages in order, up to `ROWS_PER_INSERT` in one statement (their ids follow each other). */
  private insertMany(sessionId: number, executionId: string | null, messages: readonly ChatMessage[]): MessageRecord[] {
    const records: MessageRecord[] = [];
    for (let start = 0; start < messages.length; start += ROWS_PER_INSERT) {
      const chunk = messages.slice(start, start + ROWS_PER_INSERT);
      if (chunk.length === 1) {
        records.push(this.insert(sessionId, executionId, chunk[0]));
        continue;
      }
      const rows = chunk.map((message) => this.rowOf(sessionId, executionId, message));
      const last = Number(this.multiInsert(rows.length).run(rows.flat()).lastInsertRowid);
      rows.forEach((row, index) => records.push(recordOf(last - (rows.length - 1 - index), row, chunk[index])));
    }
    return records;
  }

  private multiInsert(rows: number): Statement<unknown[]> {
    let statement = this.multiInsertStatements.get(rows);
    if (!statement) {
      const values = Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
      statement = this.database.connection.prepare(
        `INSERT INTO messages (session_id, execution_id, role, content, tool_calls, tool_call_id, is_error, attachments, created_at) VALUES ${values}`,
      );
      this.multiInsertStatements.set(rows, statement);
    }
    return statement;
  }

  /** The values of a message's row, in the insert's order. */
  private rowOf(sessionId: number, executionId: string | null, message: ChatMessage): InsertParameters {
    if (!(CHAT_ROLES as readonly unknown[]).includes(message.role)) {
      throw new InvalidRecordError('role', message.role, CHAT_ROLES);
    }
    return [
      sessionId,
      executionId,
      message.role,
      message.content == null ? null : toWellFormed(message.content),
      message.tool_calls === undefined ? null : JSON.stringify(message.tool_calls),
      message.tool_call_id ?? null,
      message.is_error === true ? 1 : 0,
      serializeAttachmentRefs(message.attachments),
      this.database.timestamp(),
    ];
  }

  /** The session's messages in the order they were appended. */
  listBySession(sessionId: number): MessageRecord[] {
    return this.bySessionStatement.all(sessionId).map(toRecord);
  }

  /** The session's conversation as chat messages, ready to send with the next run. */
  toChatMessages(sessionId: number): ChatMessage[] {
    const toolNames = new Map<string, string>();
    return this.listBySession(sessionId).map((record) => {
      const message: ChatMessage = { role: record.role, content: record.content };
      if (record.toolCalls !== undefined) {
        message.tool_calls = record.toolCalls;
        for (const call of record.toolCalls) toolNames.set(call.id, call.function.name);
      }
      if (record.toolCallId !== undefined) {
        message.tool_call_id = record.toolCallId;
        const name = toolNames.get(record.toolCallId);
        if (name !== undefined) message.name = name;
      }
      if (record.isError) message.is_error = true;
      if (record.attachments !== undefined) {
        message.attachments = record.attachments;
        const images = this.readImages(sessionId, record.attachments);
        if (images.length > 0) message.images = images;
      }
      return message;
    });
  }

  // An image the store no longer has (or another session's) is left out: the message still lists
  // its reference. Providers take a bare `image/png`, so parameters of the media type are dropped.
  private readImages(sessionId: number, attachments: readonly ChatAttachment[]): ChatImage[] {
    const images: ChatImage[] = [];
    for (const attachment of attachments) {
      if (!attachment.mediaType.toLowerCase().startsWith('image/')) continue;
      const stored = this.attachments.read(sessionId, attachment.id);
      if (!stored) continue;
      const data = Buffer.from(stored.data.buffer, stored.data.byteOffset, stored.data.byteLength).toString('base64');
      images.push({ mediaType: stored.mediaType.split(';')[0].trim().toLowerCase(), data });
    }
    return images;
  }
}

/**
 * The record of a message just written, built from what was written rather than read back: the
 * tool calls, stored as their JSON, are copied instead of parsed again (a round of many calls is long).
 */
function recordOf(id: number, row: InsertParameters, message: ChatMessage): MessageRecord {
  const [sessionId, executionId, , content, , toolCallId, isError, attachments, createdAt] = row;
  const record: MessageRecord = { id, sessionId, executionId, role: message.role, content, createdAt };
  if (message.tool_calls !== undefined) {
    record.toolCalls = message.tool_calls.map((call) => ({ id: call.id, type: call.type, function: { name: call.function.name, arguments: call.function.arguments } }));
  }
  if (toolCallId !== null) record.toolCallId = toolCallId;
  if (isError === 1) record.isError = true;
  if (attachments !== null) {
    const refs = parseAttachmentRefs(attachments);
    if (refs.length > 0) record.attachments = refs;
  }
  return record;
}

function toRecord(row: MessageRow): MessageRecord {
  const record: MessageRecord = {
    id: row.id,
    sessionId: row.session_id,
    executionId: row.execution_id,
    role: row.role as ChatRole,
    content: row.content,
    createdAt: row.created_at,
  };
  if (row.tool_calls !== null) record.toolCalls = readToolCalls(row.tool_calls);
  if (row.tool_call_id !== null) record.toolCallId = row.tool_call_id;
  if (row.is_error === 1) record.isError = true;
  const attachments = parseAttachmentRefs(row.attachments);
  if (attachments.length > 0) record.attachments = attachments;
  return record;
}

// Only this repository writes the column, so anything else means a damaged row: it yields no calls
// rather than breaking the whole conversation.
function readToolCalls(json: string): ToolCall[] {
  try {
    const value: unknown = JSON.parse(json);
    return Array.isArray(value) ? (value as ToolCall[]) : [];
  } catch {
    return [];
  }
}
