import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import type { McpServerConfig } from '../../harness/mcp/mcp-server-config';
import { parseMcpToolName } from '../../harness/tool/mcp-tool-name';
import type { PermissionLevel } from '../../harness/tool/permission-level';
import type { ActivityRecord, ActivityRepository } from '../persistence/activity-repository';
import type { MessageRecord, MessageRepository } from '../persistence/message-repository';
import type { ExecutionMode, SessionPage, SessionRecord, SessionRepository } from '../persistence/session-repository';
import { InvalidSessionInputError, SessionNotFoundError } from './session-errors';
import { sessionWorkspacePath } from './session-workspace';

/** How many sessions a page of `GET /api/sessions` holds: by default, and at most. */
export const SESSION_PAGE_SIZE = { default: 20, max: 100 } as const;

/** Which page of their sessions a user asks for; see `SessionRepository.listOwned`. */
export interface ListSessionsRequest {
  /** 1 to `SESSION_PAGE_SIZE.max`; `SESSION_PAGE_SIZE.default` when omitted. */
  limit?: number;
  /** Only sessions with a lower id: the previous page's `next`. */
  before?: number;
}

export interface CreateSessionRequest {
  executionMode: ExecutionMode;
  permissionLevel: PermissionLevel;
  tools?: string[];
  mcpServers?: number[];
  workspace?: string;
}

export interface SessionServiceDeps {
  sessions: SessionRepository;
  messages: MessageRepository;
  activities: ActivityRepository;
  workspaceRoot: string;
  /** Names of the server's built-in tools. */
  builtinToolNames: () => readonly string[];
  mcpServers: readonly McpServerConfig[];
}

/** Sessions as users see them: creation, ownership, permission changes, history. */
export class SessionService {
  constructor(private readonly deps: SessionServiceDeps) {}

  create(userId: number, request: CreateSessionRequest): SessionRecord {
    const mcpServers = [...new Set(request.mcpServers ?? [])];
    mcpServers.forEach((id, index) => {
      if (!this.deps.mcpServers.some((server) => server.id === id)) {
        throw new InvalidSessionInputError(`mcpServers[${index}]`, `no MCP server with id ${id} is configured`);
      }
    });
    const tools = request.tools ? [...new Set(request.tools)] : null;
    tools?.forEach((name, index) => this.checkToolName(name, index, mcpServers));
    const workspace = request.workspace ?? `session-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    const record = this.deps.sessions.create({
      userId,
      executionMode: request.executionMode,
      permissionLevel: request.permissionLevel,
      tools,
      mcpServers,
      workspace,
    });
    fs.mkdirSync(this.workspacePath(record), { recursive: true });
    return record;
  }

  /** The session if `userId` owns it; another user's session is as absent as a missing one. */
  getOwned(sessionId: number, userId: number): SessionRecord {
    const session = this.deps.sessions.findOwned(sessionId, userId);
    if (!session) throw new SessionNotFoundError(sessionId);
    return session;
  }

  /** The user's own sessions, newest first, a page at a time (the request is validated at the edge). */
  listOwned(userId: number, request: ListSessionsRequest = {}): SessionPage {
    return this.deps.sessions.listOwned(userId, { limit: request.limit ?? SESSION_PAGE_SIZE.default, before: request.before });
  }

  updatePermissionLevel(sessionId: number, userId: number, level: PermissionLevel): SessionRecord {
    this.getOwned(sessionId, userId);
    const updated = this.deps.sessions.updatePermissionLevel(sessionId, level);
    if (!updated) throw new SessionNotFoundError(sessionId);
    return updated;
  }

  listMessages(sessionId: number, userId: number): MessageRecord[] {
    this.getOwned(sessionId, userId);
    return this.deps.messages.listBySession(sessionId);
  }

  listActivities(sessionId: number, userId: number): ActivityRecord[] {
    this.getOwned(sessionId, userId);
    return this.deps.activities.listBySession(sessionId);
  }

  /** The session's folder on the server (see `sessionWorkspacePath`). */
  workspacePath(session: SessionRecord): string {
    return sessionWorkspacePath(this.deps.workspaceRoot, session);
  }

  private checkToolName(name: string, index: number, mcpServers: number[]): void {
    if (this.deps.builtinToolNames().includes(name)) return;
    const mcpName = parseMcpToolName(name);
    if (mcpName) {
      const server = this.deps.mcpServers.find((candidate) => candidate.name === mcpName.serverName);
      if (server && mcpServers.includes(server.id)) return;
      throw new InvalidSessionInputError(`tools[${index}]`, `'${name}' belongs to no MCP server of this session`);
    }
    throw new InvalidSessionInputError(`tools[${index}]`, `'${name}' is not a known tool`);
  }
}
