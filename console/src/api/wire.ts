/**
 * What the server sends and takes, as docs/interface.md describes it. Only the fields the console
 * reads are listed; every object may carry more.
 */

/** A server → client WebSocket event; `seq` numbers the events of a session. */
export interface WsEvent {
  type: string;
  sessionId: number | null;
  data: Record<string, unknown>;
  timestamp: number;
  seq?: number;
}

export const EXECUTION_MODES = ['CLOUD', 'LOCAL'] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];

export const PERMISSION_LEVELS = ['READ_ONLY', 'READ_WRITE', 'SMART', 'FULL'] as const;
export type PermissionLevel = (typeof PERMISSION_LEVELS)[number];

export interface Session {
  id: number;
  userId: number;
  executionMode: ExecutionMode;
  permissionLevel: PermissionLevel;
  /** `null`: every tool. */
  tools: string[] | null;
  mcpServers: number[];
  workspace: string;
  createdAt: string;
  /** Present in `GET /api/sessions` only. */
  activeRun?: boolean;
  /** Present in `GET /api/sessions` only: `waiting` while the run waits for a person. */
  runStatus?: 'running' | 'waiting' | null;
}

export interface SessionPage {
  sessions: Session[];
  next: number | null;
}

/** Body of `POST /api/sessions`. */
export interface NewSession {
  executionMode: ExecutionMode;
  permissionLevel: PermissionLevel;
  tools?: string[];
  mcpServers?: number[];
  workspace?: string;
}

/** A stored binary part of a tool result. */
export interface Attachment {
  id: string;
  mediaType: string;
  bytes: number;
  name?: string;
}

/** A message of `GET /api/sessions/:id/messages`. */
export interface StoredMessage {
  id: number;
  role: 'system' | 'user' | 'assistant' | 'tool';
  executionId?: string;
  content: string | null;
  toolCalls?: Array<{ id: string; function?: { name?: string; arguments?: string } }>;
  toolCallId?: string;
  attachments?: Attachment[];
  createdAt: string;
}

/** An entry of `GET /api/sessions/:id/activities`. */
export interface Activity {
  id: number;
  toolCallId: string;
  toolName: string;
  type: string;
  target: string;
  summary: string;
  status: 'SUCCESS' | 'ERROR';
  durationMs?: number;
  errorMessage?: string;
  attachments?: Attachment[];
  createdAt: string;
}

export interface EventsPage {
  events: WsEvent[];
  next: number | null;
}

/** MCP tool annotations: hints about a tool's behaviour, never permissions. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** An entry of `GET /api/tools`. */
export interface ToolEntry {
  name: string;
  source: 'builtin' | 'mcp';
  executor: 'server' | 'desktop' | 'mcp-server';
  serverId?: number;
  originalName?: string;
  title?: string;
  annotations?: ToolAnnotations;
  /** MCP tools: whether the server is marked trusted (only then do its annotations count). */
  trusted?: boolean;
  /** Runs on the server whatever the mode, on the session's own records only. */
  serverOnly?: boolean;
  /** Changes files of the session workspace. */
  writesFiles?: boolean;
  /** Runs arbitrary commands. */
  runsCommands?: boolean;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** Client → server frames the console sends. */
export type ClientFrame =
  | { type: 'subscribe'; sessionId: number; after?: number }
  | { type: 'unsubscribe'; sessionId: number }
  | { type: 'approval_response'; sessionId: number; requestId: string; approved: boolean; message?: string }
  | { type: 'ask_user_answer'; sessionId: number; requestId: string; answers: Record<string, string | string[]> };
