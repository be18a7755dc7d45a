import type { Statement } from 'better-sqlite3';
import { isPermissionLevel, parsePermissionLevel, PERMISSION_LEVELS, type PermissionLevel } from '../../harness/tool/permission-level';
import type { HarnessDatabase } from './harness-database';
import { InvalidRecordError } from './persistence-errors';

/** Where a session's tools run: on the server, or on the user's desktop. */
export type ExecutionMode = 'CLOUD' | 'LOCAL';

export const EXECUTION_MODE_VALUES: readonly ExecutionMode[] = ['CLOUD', 'LOCAL'];

/** A stored session, shaped like the HTTP answer (plus `mcpServers`). */
export interface SessionRecord {
  id: number;
  userId: number;
  executionMode: ExecutionMode;
  permissionLevel: PermissionLevel;
  /** The tools the session may use; `null` means every tool. */
  tools: string[] | null;
  /** Ids of the MCP servers (from the MCP config file) the session connects to. */
  mcpServers: number[];
  /** The session's workspace folder name. */
  workspace: string;
  /** ISO-8601. */
  createdAt: string;
}

export interface CreateSessionInput {
  userId: number;
  executionMode: ExecutionMode;
  permissionLevel: PermissionLevel;
  /** Omitted or `null`: every tool. */
  tools?: string[] | null;
  mcpServers?: number[];
  workspace: string;
}

/** Which page of a user's sessions to read: newest first, by id. */
export interface SessionPageRequest {
  /** At most this many sessions (a positive integer). */
  limit: number;
  /** Only sessions whose id is below this one: the `next` of the page before. */
  before?: number;
}

/** One page of a user's sessions. */
export interface SessionPage {
  /** Newest (highest id) first. */
  sessions: SessionRecord[];
  /** The `before` of the following page; `null` when this page is the last one. */
  next: number | null;
}

interface SessionRow {
  id: number;
  user_id: number;
  execution_mode: string;
  permission_level: string;
  tools: string | null;
  mcp_servers: string;
  workspace: string;
  created_at: string;
}

/** Sessions: who owns them, where their tools run and how much they may do. */
export class SessionRepository {
  private readonly insertStatement: Statement<[number, string, string, string | null, string, string, string]>;
  private readonly byIdStatement: Statement<[number], SessionRow>;
  private readonly ownedStatement: Statement<[number, number], SessionRow>;
  private readonly updateLevelStatement: Statement<[string, number]>;
  private readonly levelStatement: Statement<[number], string>;
  private readonly pageStatement: Statement<[number, number, number], SessionRow>;
  private readonly deleteStatement: Statement<[number]>;
  private readonly workspaceUsedStatement: Statement<[number, string], number>;

  constructor(private readonly database: HarnessDatabase) {
    const db = database.connection;
    this.insertStatement = db.prepare(
      `INSERT INTO sessions (user_id, execution_mode, permission_level, tools, mcp_servers, workspace, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    this.byIdStatement = db.prepare('SELECT * FROM sessions WHERE id = ?');
    this.ownedStatement = db.prepare('SELECT * FROM sessions WHERE id = ? AND user_id = ?');
    this.updateLevelStatement = db.prepare('UPDATE sessions SET permission_level = ? WHERE id = ?');
    this.levelStatement = db.prepare<[number], string>('SELECT permission_level FROM sessions WHERE id = ?').pluck();
    this.pageStatement = db.prepare('SELECT * FROM sessions WHERE user_id = ? AND id < ? ORDER BY id DESC LIMIT ?');
    this.deleteStatement = db.prepare('DELETE FROM sessions WHERE id = ?');
    this.workspaceUsedStatement = db.prepare<[number, string], number>('SELECT 1 FROM sessions WHERE user_id = ? AND workspace = ? LIMIT 1').pluck();
  }

  /** @throws InvalidRecordError for an unknown execution mode or permission level. */
  create(input: CreateSessionInput): SessionRecord {
    if (!(EXECUTION_MODE_VALUES as readonly unknown[]).includes(input.executionMode)) {
      throw new InvalidRecordError('executionMode', input.executionMode, EXECUTION_MODE_VALUES);
    }
    assertPermissionLevel(input.permissionLevel);
    const tools = input.tools == null ? null : JSON.stringify(input.tools);
    const createdAt = this.database.timestamp();
    // Durable before the answer that announces it.
    return this.database.transaction(() => {
      const { lastInsertRowid } = this.insertStatement.run(
        input.userId,
        input.executionMode,
        input.permissionLevel,
        tools,
        JSON.stringify(input.mcpServers ?? []),
        input.workspace,
        createdAt,
      );
      return this.findById(Number(lastInsertRowid)) as SessionRecord;
    });
  }

  findById(id: number): SessionRecord | undefined {
    const row = this.byIdStatement.get(id);
    return row && toRecord(row);
  }

  /** The session if `userId` owns it; `undefined` when it is missing or someone else's. */
  findOwned(id: number, userId: number): SessionRecord | undefined {
    const row = this.ownedStatement.get(id, userId);
    return row && toRecord(row);
  }

  /**
   * A page of the user's own sessions, newest first. Paging by id (a keyset, not an offset) keeps
   * pages apart while sessions are created and deleted between two reads.
   */
  listOwned(userId: number, request: SessionPageRequest): SessionPage {
    // One row more than asked says whether another page follows.
    const rows = this.pageStatement.all(userId, request.before ?? Number.MAX_SAFE_INTEGER, request.limit + 1);
    const sessions = rows.slice(0, request.limit).map(toRecord);
    return { sessions, next: rows.length > request.limit ? sessions[sessions.length - 1].id : null };
  }

  /**
   * Deletes the session and, through the schema's `ON DELETE CASCADE`, everything stored for it:
   * messages, activities, attachments, runs (and their staged results), tasks.
   * @returns whether there was such a session.
   */
  delete(id: number): boolean {
    return this.database.transaction(() => this.deleteStatement.run(id).changes > 0);
  }

  /** Whether some session of the user has the workspace folder `workspace`. */
  isWorkspaceInUse(userId: number, workspace: string): boolean {
    return this.workspaceUsedStatement.get(userId, workspace) !== undefined;
  }

  /**
   * Sets the level that the next tool call of the session sees (even mid-run).
   * @returns the updated session, or `undefined` when there is no such session.
   * @throws InvalidRecordError for an unknown level.
   */
  updatePermissionLevel(id: number, level: PermissionLevel): SessionRecord | undefined {
    assertPermissionLevel(level);
    const { changes } = this.database.transaction(() => this.updateLevelStatement.run(level, id));
    return changes === 0 ? undefined : this.findById(id);
  }

  /**
   * The session's current level, read by the dispatcher before every LOCAL tool call (a
   * primary-key lookup of one column). `null` when there is no such session.
   */
  getPermissionLevel(id: number): PermissionLevel | null {
    const level = this.levelStatement.get(id);
    return level === undefined ? null : parsePermissionLevel(level);
  }
}

function assertPermissionLevel(level: unknown): void {
  if (!isPermissionLevel(level)) throw new InvalidRecordError('permissionLevel', level, PERMISSION_LEVELS);
}

function toRecord(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    executionMode: row.execution_mode === 'LOCAL' ? 'LOCAL' : 'CLOUD',
    permissionLevel: parsePermissionLevel(row.permission_level),
    tools: row.tools === null ? null : readStringArray(row.tools),
    mcpServers: readNumberArray(row.mcp_servers),
    workspace: row.workspace,
    createdAt: row.created_at,
  };
}

// A damaged allow-list grants nothing rather than everything: `null` would mean "all tools".
function readStringArray(json: string): string[] {
  const value = parseJson(json);
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function readNumberArray(json: string): number[] {
  const value = parseJson(json);
  return Array.isArray(value) ? value.filter((item): item is number => typeof item === 'number') : [];
}

function parseJson(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}
