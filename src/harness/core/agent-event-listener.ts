import type { ChatUsage } from '../llm/chat-request';
import type { ToolCallProgress } from '../tool/tool-call-context';
import type { ToolResultMeta } from '../tool/tool-result';

/**
 * What an agent run reports while it happens: streamed text and reasoning, each tool call (once
 * its id and name are known, then its argument fragments), each tool result, and how the run
 * ended. Every run ends with exactly one `onMessageEnd` or `onError`.
 *
 * The loop wraps every call: an exception a listener throws is logged and swallowed, so an
 * audience that fails never breaks the run.
 */
export interface AgentEventListener {
  /** A fragment of the model's answer text. */
  onContentDelta(delta: string): void;
  /** The model started streaming reasoning. */
  onThinkingStart?(): void;
  /** A fragment of the model's reasoning. */
  onThinkingDelta?(delta: string): void;
  /** The reasoning ended (the answer text or a tool call follows, or the stream ended). */
  onThinkingEnd?(): void;
  /**
   * A tool call began: called exactly once per call id, before any `onToolCallArgsDelta` for it.
   * `argumentsJson` holds the argument text streamed before the call could be announced (often
   * empty).
   */
  onToolCallStart(toolCallId: string, toolName: string, argumentsJson: string): void;
  /** A further fragment of a started call's arguments. */
  onToolCallArgsDelta?(toolCallId: string, argumentsDelta: string): void;
  /** A running call reported progress (an MCP server's progress notification, for one). */
  onToolCallProgress?(toolCallId: string, progress: ToolCallProgress): void;
  /**
   * The result of a call, exactly the content the model receives. Called in the round's call
   * order. `meta` carries the facts decided where the tool ran — its status, error message and
   * duration — so a listener never has to infer them from the text.
   */
  onToolCallResult(toolCallId: string, result: string, meta?: ToolResultMeta): void;
  /**
   * The run ended normally: the model answered without tool calls, or the run was cancelled.
   * `usage` is the run's total over all rounds; `null` when the model reported none.
   */
  onMessageEnd(usage: ChatUsage | null): void;
  /** The run failed (model error, too many rounds, a store that could not save, the server stopping it). */
  onError(message: string): void;
}
