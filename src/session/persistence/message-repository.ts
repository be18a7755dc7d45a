import type { Statement } from 'better-sqlite3';
import type { ChatAttachment, ChatImage, ChatMessage, ChatRole, ToolCall } from '../../harness/llm/chat-request';
import type { AttachmentStore } from '../../harness/tool/attachment-store';
import { parseAttachmentRefs, serializeAttachmentRefs } from './attachment-refs';
import type { HarnessDatabase } from './harness-database';
import { InvalidRecordError } from './persistence-errors';
import { SqliteAttachmentStore } from './sqlite-attachment-store';
import { toWellFormed } from './well-formed-text';

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
  private readonly stageStatement: Statement<[string, string, string | null, number, string | null, string]>;
  private readonly stagedStatement: Statement<[string], StagedRow>;
  private readonly clearStagedStatement: Statement<[string]>;

  /**
   * @param attachments where `toChatMessages` reads the images of tool messages back from; by
   * default the database's own attachments table.
   */
  constructor(
    private readonly database: HarnessDatabase,
    private readonly attachments: AttachmentStore = new SqliteAttachmentStore(database),
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
   * Keeps the result of one call of a running round, the moment the call finishes, so that a
   * process that dies before the round ends does not lose it. `appendRound` moves the round's
   * results into the conversation in call order; a run's start-up recovery reads what is left.
   */
  stageToolResult(executionId: string, message: ChatMessage): void {
    if (message.role !== 'tool' || message.tool_call_id === undefined) throw new InvalidRecordError('role', message.role, ['tool']);
    const toolCallId = message.tool_call_id;
    // In the agent's batch: results that finish in the same turn share one commit, which comes
    // before any event about them is sent.
    this.database.batch(() =>
      this.stageStatement.run(
        executionId,
        toolCallId,
        message.content == null ? null : toWellFormed(message.content),
        message.is_error === true ? 1 : 0,
        serializeAttachmentRefs(message.attachments),
        this.database.timestamp(),
      ),
    );
  }

  /** The results a run has staged and not yet appended, by tool call id. */
  stagedToolResults(executionId: string): Map<string, StagedToolResult> {
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
    return this.database.batch(() => {
      const records = messages.map((message) => this.insert(sessionId, executionId, message));
      this.clearStagedStatement.run(executionId);
      return records;
    });
  }

  /**
   * Appends one message, in the agent's batch (inside a `transaction`, as part of it).
   * @throws InvalidRecordError for an unknown role; the database's error for a missing session.
   */
  append(sessionId: number, executionId: string | null, message: ChatMessage): MessageRecord {
    return this.database.batch(() => this.insert(sessionId, executionId, message));
  }

  /** Appends all messages atomically, in the agent's batch: if one cannot be written, none is. */
  appendMany(sessionId: number, executionId: string | null, messages: readonly ChatMessage[]): MessageRecord[] {
    return this.database.batch(() => messages.map((message) => this.insert(sessionId, executionId, message)));
  }

  private insert(sessionId: number, executionId: string | null, message: ChatMessage): MessageRecord {
    if (!(CHAT_ROLES as readonly unknown[]).includes(message.role)) {
      throw new InvalidRecordError('role', message.role, CHAT_ROLES);
    }
    const row: MessageRow = {
      id: 0,
      session_id: sessionId,
      execution_id: executionId,
      role: message.role,
      content: message.content == null ? null : toWellFormed(message.content),
      tool_calls: message.tool_calls === undefined ? null : JSON.stringify(message.tool_calls),
      tool_call_id: message.tool_call_id ?? null,
      is_error: message.is_error === true ? 1 : 0,
      attachments: serializeAttachmentRefs(message.attachments),
      created_at: this.database.timestamp(),
    };
    const { lastInsertRowid } = this.insertStatement.run(
      row.session_id,
      row.execution_id,
      row.role,
      row.content,
      row.tool_calls,
      row.tool_call_id,
      row.is_error,
      row.attachments,
      row.created_at,
    );
    row.id = Number(lastInsertRowid);
    return toRecord(row);
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
