import type { Statement } from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import type { AttachmentStore, NewAttachment, ToolAttachment } from '../../harness/tool/attachment-store';
import type { HarnessDatabase } from './harness-database';
import { toWellFormed } from './well-formed-text';

/** What an attachment of unusable media type is stored as. */
export const FALLBACK_MEDIA_TYPE = 'application/octet-stream';

const TOKEN = "[A-Za-z0-9!#$%&'*+.^_`|~-]+";
const PARAMETER = `\\s*;\\s*${TOKEN}=(?:${TOKEN}|"[^"\\\\\\x00-\\x1f\\x7f]*")`;
const MEDIA_TYPE = new RegExp(`^(${TOKEN}/${TOKEN})((?:${PARAMETER})*)$`);

interface AttachmentRow {
  media_type: string;
  name: string | null;
  data: Buffer;
}

/**
 * Binary parts of tool results, kept once in the `attachments` table under a random id
 * (`att_` + 16 random bytes, base64url) that cannot be guessed from another one. Every read is
 * scoped by session: another session's id is as absent as an unknown one.
 */
export class SqliteAttachmentStore implements AttachmentStore {
  private readonly insertStatement: Statement<[string, number, string | null, string, string, string | null, number, Buffer, string]>;
  private readonly readStatement: Statement<[string, number], AttachmentRow>;

  constructor(private readonly database: HarnessDatabase) {
    const db = database.connection;
    this.insertStatement = db.prepare(
      `INSERT INTO attachments (id, session_id, execution_id, tool_call_id, media_type, name, bytes, data, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.readStatement = db.prepare('SELECT media_type, name, data FROM attachments WHERE id = ? AND session_id = ?');
  }

  /**
   * Stores the bytes in one insert. A media type that is not a valid `type/subtype` (it is served
   * as `content-type`, and comes from tools and MCP servers) is stored as `application/octet-stream`.
   * @throws the database's error for a missing session.
   */
  save(attachment: NewAttachment): ToolAttachment {
    const id = `att_${randomBytes(16).toString('base64url')}`;
    const mediaType = normalizeMediaType(attachment.mediaType);
    const name = attachment.name === undefined ? undefined : toWellFormed(attachment.name);
    const data = Buffer.from(attachment.data.buffer, attachment.data.byteOffset, attachment.data.byteLength);
    // In the agent's batch: the attachment is told through the run's events, after the commit.
    this.database.batchStatement(() =>
      this.insertStatement.run(
      id,
      attachment.sessionId,
      attachment.executionId,
      attachment.toolCallId,
      mediaType,
      name ?? null,
        data.byteLength,
        data,
        this.database.timestamp(),
      ),
    );
    const saved: ToolAttachment = { id, mediaType, bytes: data.byteLength };
    if (name !== undefined) saved.name = name;
    return saved;
  }

  read(sessionId: number, id: string): { mediaType: string; data: Uint8Array; name?: string } | null {
    const row = this.readStatement.get(id, sessionId);
    if (!row) return null;
    const found: { mediaType: string; data: Uint8Array; name?: string } = { mediaType: row.media_type, data: row.data };
    if (row.name !== null) found.name = row.name;
    return found;
  }
}

/**
 * The media type with its `type/subtype` in lower case (so `image/` tells an image), or
 * `application/octet-stream` when it is not one a `content-type` header can carry.
 */
export function normalizeMediaType(value: string): string {
  const match = MEDIA_TYPE.exec(typeof value === 'string' ? value.trim() : '');
  return match ? match[1].toLowerCase() + match[2] : FALLBACK_MEDIA_TYPE;
}
