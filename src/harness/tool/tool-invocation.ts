import type { LlmModelConfig } from '../llm/chat-request';
import type { Tool } from './tool';
import type { ToolCallProgress } from './tool-call-context';
import type { ToolResult } from './tool-result';

/**
 * One tool call with its whole context, explicit: what the dispatcher needs to decide where the
 * call runs, whether it needs approval, and whom it runs as. Replaces the positional parameters
 * of the legacy `dispatch`.
 */
export interface ToolInvocation {
  /** The model's id for this call; results and events are keyed by it. */
  callId: string;
  /** The run the call belongs to; attachments of its result are filed under it. */
  executionId?: string | null;
  toolName: string;
  /** The arguments exactly as the model wrote them (possibly malformed JSON). */
  argumentsJson: string;
  /** `CLOUD` or `LOCAL`; `null` for calls outside a session. */
  executionMode: string | null;
  sessionId: number | null;
  /** The session owner. */
  userId: number | null;
  /** The user the tool runs as when that differs from the owner (delegated or scheduled runs). */
  executionUserId: number | null;
  /** The session workspace the tool is confined to. */
  workspace: string | null;
  /** The level the run started with; in LOCAL mode the dispatcher re-reads the current one. */
  permissionLevel: string | null;
  /** The session's model, used by the danger assessor at SMART. */
  modelConfig: LlmModelConfig | null;
  /** The session's own tools (e.g. MCP adapters), looked up after the registry. */
  sessionTools: Tool[] | null;
  /**
   * Fires when the call should stop (the run was cancelled). The dispatcher combines it with the
   * call's deadline and hands it to whatever executes the call; a tool reads it through
   * `ToolCallContext.signal()`. Absent: the call cannot be cancelled (the legacy behaviour).
   */
  signal?: AbortSignal;
  /** Receives the call's progress reports (`ToolCallContext.reportProgress`), e.g. from an MCP server. */
  onProgress?: (progress: ToolCallProgress) => void;
}

/**
 * How a call may overlap the other calls of its round: `shared` calls (read-only ones) run
 * together; an `exclusive` call waits for every call before it, and the calls after it wait for it.
 */
export type ToolConcurrency = 'shared' | 'exclusive';

/**
 * What runs invocations: the agent loop depends on this, not on the concrete dispatcher, so the
 * loop sits above the contract only and a product can put its own policy in front.
 */
export interface ToolInvocationDispatcher {
  /** Never rejects: a failure is an `error` result. */
  dispatchInvocation(invocation: ToolInvocation): Promise<ToolResult>;
  /**
   * How the call may overlap the others of its round, from its tool's descriptor. Absent: every
   * call of a round runs at once (the behaviour before scheduling).
   */
  concurrencyOf?(invocation: ToolInvocation): ToolConcurrency;
}
