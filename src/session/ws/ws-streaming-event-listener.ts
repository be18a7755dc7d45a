import type { AgentEventListener } from '../../harness/core/agent-event-listener';
import type { ChatUsage } from '../../harness/llm/chat-request';
import type { ToolCallProgress } from '../../harness/tool/tool-call-context';
import { normalizeToolResult, type ToolResultMeta } from '../../harness/tool/tool-result';
import { describeToolActivity } from '../persistence/activity-describer';
import type { StreamingWsRegistry } from './streaming-ws-registry';
import { createWsEvent, type WsEventType } from './ws-event';
import { errorMessage } from '../../harness/runtime/error-message';

/** What the listener hands to the store for each tool result. */
export interface ToolActivityInput {
  sessionId: number;
  executionId: string;
  toolCallId: string;
  toolName: string;
  type: string;
  target: string;
  summary: string;
  status: 'SUCCESS' | 'ERROR';
  metadata: Record<string, unknown>;
}

/** Where activities are written (the SQLite activity repository in the server). */
export interface ActivityRecorder {
  record(input: ToolActivityInput): { id: number };
}

export interface WsStreamingEventListenerOptions {
  registry: StreamingWsRegistry;
  activities: ActivityRecorder;
  /** The user whose connections receive the run's events (the session owner). */
  userId: number;
  sessionId: number;
  executionId: string;
  now?: () => number;
  logger?: { warn(message: string): void };
  /**
   * Marks the run's `error` event with `final: true` (interface.md): every `onError` ends the
   * run. The server always sets it; it is an option only so that a listener built without it
   * sends the event exactly as it did before the field existed.
   */
  markFinalErrors?: boolean;
  /** Least time between two `tool_call_progress` events of one call (default 250 ms). */
  progressIntervalMs?: number;
}

export const DEFAULT_PROGRESS_INTERVAL_MS = 250;

/** The progress events of one running call: when one last went out, and the one held back. */
interface ProgressThrottle {
  lastSentAt: number;
  pending: Record<string, unknown> | null;
  timer: NodeJS.Timeout | null;
}

interface ToolCallSeen {
  name: string;
  arguments: string;
}

/**
 * Turns agent-loop callbacks into the WebSocket events of interface.md for one run, and records
 * an activity per tool result. A failing send or activity write is logged and swallowed: the
 * run never breaks because its audience or its audit trail did.
 */
export class WsStreamingEventListener implements AgentEventListener {
  private readonly calls = new Map<string, ToolCallSeen>();
  private readonly progress = new Map<string, ProgressThrottle>();
  private readonly progressIntervalMs: number;
  private readonly now: () => number;

  constructor(private readonly options: WsStreamingEventListenerOptions) {
    this.now = options.now ?? Date.now;
    this.progressIntervalMs = options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
  }

  onContentDelta(delta: string): void {
    this.emit('content_delta', { delta });
  }

  onThinkingStart(): void {
    this.emit('thinking_start', {});
  }

  onThinkingDelta(delta: string): void {
    this.emit('thinking_delta', { delta });
  }

  onThinkingEnd(): void {
    this.emit('thinking_end', {});
  }

  onToolCallStart(toolCallId: string, toolName: string, argumentsJson: string): void {
    if (this.calls.has(toolCallId)) return;
    this.calls.set(toolCallId, { name: toolName, arguments: argumentsJson ?? '' });
    this.emit('tool_call_start', { tool_call_id: toolCallId, tool_name: toolName, arguments: argumentsJson ?? '' });
  }

  onToolCallArgsDelta(toolCallId: string, argumentsDelta: string): void {
    const call = this.calls.get(toolCallId);
    if (call) call.arguments += argumentsDelta;
    this.emit('tool_call_args_delta', { tool_call_id: toolCallId, arguments: argumentsDelta });
  }

  /**
   * Sends `tool_call_progress`, at most one per call per `progressIntervalMs`: a server that
   * reports progress in a tight loop must not flood the clients. A report that comes too soon
   * waits for the end of the interval, replaced by any later one; the call's result drops it.
   */
  onToolCallProgress(toolCallId: string, progress: ToolCallProgress): void {
    const data: Record<string, unknown> = { tool_call_id: toolCallId, progress: progress.progress };
    if (progress.total !== undefined) data.total = progress.total;
    if (progress.message !== undefined) data.message = progress.message;
    const throttle = this.progress.get(toolCallId) ?? { lastSentAt: -Infinity, pending: null, timer: null };
    this.progress.set(toolCallId, throttle);
    const wait = throttle.lastSentAt + this.progressIntervalMs - this.now();
    if (wait <= 0 && throttle.timer === null) {
      throttle.lastSentAt = this.now();
      this.emit('tool_call_progress', data);
      return;
    }
    throttle.pending = data;
    throttle.timer ??= setTimeout(() => {
      throttle.timer = null;
      if (throttle.pending === null) return;
      throttle.lastSentAt = this.now();
      this.emit('tool_call_progress', throttle.pending);
      throttle.pending = null;
    }, Math.max(0, wait));
  }

  /**
   * The status is the fact in `meta`, decided where the tool ran. Only a caller that passes no
   * meta gets the legacy guess from the text (`isErrorResult`).
   */
  onToolCallResult(toolCallId: string, result: string, meta?: ToolResultMeta): void {
    const call = this.calls.get(toolCallId);
    const toolName = call?.name ?? 'unknown';
    const isError = meta ? meta.status === 'error' : isErrorResult(result);
    const activity = describeToolActivity(toolName, call?.arguments ?? '', result, isError, meta ? { errorMessage: meta.errorMessage } : undefined);
    const event: Record<string, unknown> = {
      tool_call_id: toolCallId,
      tool_name: toolName,
      result,
      status: isError ? 'error' : 'success',
      summary: activity.summary,
    };
    // Additive (interface.md): stored binary parts, fetched from the attachments route.
    if (meta?.attachments && meta.attachments.length > 0) event.attachments = meta.attachments;
    this.emit('tool_call_result', event);
    this.recordActivity(toolCallId, toolName, activity, isError, auditDetails(meta));
    this.dropProgress(toolCallId);
    // The call is over. Some providers number calls per round (`call_0`, `call_1`, …), so a later
    // round may use this id again for a new call, which then gets its own tool_call_start.
    this.calls.delete(toolCallId);
  }

  onMessageEnd(usage: ChatUsage | null): void {
    this.emit('message_end', {
      prompt_tokens: usage?.promptTokens ?? 0,
      completion_tokens: usage?.completionTokens ?? 0,
      total_tokens: usage?.totalTokens ?? 0,
    });
  }

  onError(message: string): void {
    this.emit('error', this.options.markFinalErrors ? { message, final: true } : { message });
  }

  private dropProgress(toolCallId: string): void {
    const throttle = this.progress.get(toolCallId);
    if (throttle?.timer) clearTimeout(throttle.timer);
    this.progress.delete(toolCallId);
  }

  private recordActivity(
    toolCallId: string,
    toolName: string,
    activity: { type: string; target: string; summary: string },
    isError: boolean,
    metadata: Record<string, unknown>,
  ): void {
    const status = isError ? 'ERROR' : 'SUCCESS';
    try {
      const { id } = this.options.activities.record({
        sessionId: this.options.sessionId,
        executionId: this.options.executionId,
        toolCallId,
        toolName,
        type: activity.type,
        target: activity.target,
        summary: activity.summary,
        status,
        metadata,
      });
      this.emit('activity', { id, type: activity.type, target: activity.target, summary: activity.summary, status });
    } catch (error) {
      this.options.logger?.warn(`activity for tool call ${toolCallId} was not recorded: ${errorMessage(error)}`);
    }
  }

  private emit(type: WsEventType, data: Record<string, unknown>): void {
    try {
      const event = createWsEvent(type, this.options.sessionId, { ...data, executionId: this.options.executionId }, this.now);
      this.options.registry.sendToUser(this.options.userId, event);
    } catch (error) {
      this.options.logger?.warn(`event ${type} was not sent: ${errorMessage(error)}`);
    }
  }
}

/**
 * The legacy status guess from a result's text, for callers that pass no meta: exactly
 * `normalizeToolResult`'s rule (a JSON object with a top-level `error` key, or with an `exit_code`
 * whose `Number(...)` is not 0, is an error; anything else is a success), so the two cannot drift.
 *
 * Fallback only: the status of a tool call is decided where the tool ran (`ToolResult.status`).
 * Do not add new consumers.
 */
export function isErrorResult(result: string): boolean {
  return normalizeToolResult('', result).status === 'error';
}

/** The audit fields of an activity (stored in its metadata column). */
function auditDetails(meta: ToolResultMeta | undefined): Record<string, unknown> {
  const details: Record<string, unknown> = {};
  if (meta?.durationMs !== undefined) details.durationMs = meta.durationMs;
  if (meta?.errorMessage !== undefined) details.errorMessage = meta.errorMessage;
  if (meta?.attachments && meta.attachments.length > 0) details.attachments = meta.attachments;
  return details;
}
