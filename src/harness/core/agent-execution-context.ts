import { randomUUID } from 'node:crypto';
import type { ChatAttachment, ChatImage, ChatMessage, LlmModelConfig } from '../llm/chat-request';
import type { Tool } from '../tool/tool';

/** Where a session's tools run: on the server, or on the user's desktop client. */
export type ExecutionMode = 'CLOUD' | 'LOCAL';

/** The default bound on model calls per run. */
export const DEFAULT_MAX_ROUNDS = 50;

export interface AgentExecutionContextOptions {
  /** Identifies the run in events and stored messages; a random UUID when absent. */
  executionId?: string;
  sessionId: number | null;
  /** The session owner. */
  userId?: number | null;
  /** The user the tools run as when that is not the owner (delegated or scheduled runs). */
  executionUserId?: number | null;
  /** Defaults to `CLOUD`. */
  executionMode?: ExecutionMode;
  workspace?: string | null;
  /** The level the run started with; in LOCAL mode the dispatcher re-reads the current one. */
  permissionLevel?: string | null;
  modelConfig: LlmModelConfig;
  /** The session's own tools (e.g. MCP adapters), offered beside the registry's. */
  sessionTools?: Tool[];
  /** Names the run may call; `null` or absent allows every registry and session tool. */
  allowedTools?: Iterable<string> | null;
  /** Becomes the first message when given. */
  systemPrompt?: string | null;
  /** The conversation so far, ending with the user's new message; copied, never mutated. */
  messages?: ChatMessage[];
  /** Model calls allowed in this run; a positive integer, default 50. */
  maxRounds?: number;
}

/**
 * One agent run: who runs it, where its tools run, the conversation it grows, and its
 * cancellation. The loop appends to `messages`; the session layer calls `cancel()`.
 */
export class AgentExecutionContext {
  readonly executionId: string;
  readonly sessionId: number | null;
  readonly userId: number | null;
  readonly executionUserId: number | null;
  readonly executionMode: ExecutionMode;
  readonly workspace: string | null;
  readonly permissionLevel: string | null;
  readonly modelConfig: LlmModelConfig;
  readonly sessionTools: Tool[];
  readonly allowedTools: ReadonlySet<string> | null;
  readonly maxRounds: number;
  /** The conversation as the model sees it, system prompt first if there is one. */
  readonly messages: ChatMessage[];

  private readonly abortController = new AbortController();
  private interruption: string | null = null;

  constructor(options: AgentExecutionContextOptions) {
    const maxRounds = options.maxRounds ?? DEFAULT_MAX_ROUNDS;
    if (!Number.isInteger(maxRounds) || maxRounds < 1) {
      throw new RangeError(`maxRounds must be a positive integer, got ${String(maxRounds)}`);
    }
    this.executionId = options.executionId ?? randomUUID();
    this.sessionId = options.sessionId;
    this.userId = options.userId ?? null;
    this.executionUserId = options.executionUserId ?? null;
    this.executionMode = options.executionMode ?? 'CLOUD';
    this.workspace = options.workspace ?? null;
    this.permissionLevel = options.permissionLevel ?? null;
    this.modelConfig = options.modelConfig;
    this.sessionTools = [...(options.sessionTools ?? [])];
    this.allowedTools = options.allowedTools == null ? null : new Set(options.allowedTools);
    this.maxRounds = maxRounds;
    this.messages = [];
    if (options.systemPrompt != null && options.systemPrompt !== '') {
      this.messages.push({ role: 'system', content: options.systemPrompt });
    }
    this.messages.push(...(options.messages ?? []));
  }

  /** Whether the run may call `toolName` (always, when no allowed set was given). */
  isToolAllowed(toolName: string): boolean {
    return this.allowedTools === null || this.allowedTools.has(toolName);
  }

  addMessage(message: ChatMessage): void {
    this.messages.push(message);
  }

  /** Appends the answer to one tool call, as the `role: 'tool'` message the model reads. */
  addToolResult(toolCallId: string, toolName: string, content: string, isError = false, extras: ToolMessageExtras = {}): ChatMessage {
    const message = toolResultMessage(toolCallId, toolName, content, isError, extras);
    this.messages.push(message);
    return message;
  }

  /** Stops the run: the model stream is aborted and no further round starts. Idempotent. */
  cancel(reason = 'The run was cancelled'): void {
    if (!this.abortController.signal.aborted) this.abortController.abort(new Error(reason));
  }

  /**
   * Stops the run as `cancel` does, for a reason that is not the user's wish (the server is
   * shutting down): the run then ends as a failure naming `reason`, so its watchers do not take
   * it for a normal end. A run already cancelled stays cancelled.
   */
  interrupt(reason: string): void {
    if (this.abortController.signal.aborted) return;
    this.interruption = reason;
    this.abortController.abort(new Error(reason));
  }

  /** Why the run was interrupted; null unless `interrupt` stopped it. */
  get interruptedBecause(): string | null {
    return this.interruption;
  }

  get isCancelled(): boolean {
    return this.abortController.signal.aborted;
  }

  /** Fires on `cancel()`; handed to the model adapter. */
  get signal(): AbortSignal {
    return this.abortController.signal;
  }
}

/** The `role: 'tool'` message that answers a call. */
export function toolResultMessage(toolCallId: string, toolName: string, content: string, isError: boolean, extras: ToolMessageExtras = {}): ChatMessage {
  const message: ChatMessage = { role: 'tool', tool_call_id: toolCallId, name: toolName, content };
  // Providers that can mark a failed call (Anthropic's is_error) read this; the content is unchanged.
  if (isError) message.is_error = true;
  if (extras.images && extras.images.length > 0) message.images = extras.images;
  if (extras.attachments && extras.attachments.length > 0) message.attachments = extras.attachments;
  return message;
}

/** What a tool message carries beside its text: images for the model, stored attachments. */
export interface ToolMessageExtras {
  images?: ChatImage[];
  attachments?: ChatAttachment[];
}
