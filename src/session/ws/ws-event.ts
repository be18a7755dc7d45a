/**
 * The server → client WebSocket event (interface.md): its shape is frozen.
 * `data.executionId` is present on every event that belongs to a run.
 */
export interface WsEvent {
  type: WsEventType;
  sessionId: number | null;
  data: Record<string, unknown>;
  timestamp: number;
}

export type WsEventType =
  | 'content_delta'
  | 'thinking_start'
  | 'thinking_delta'
  | 'thinking_end'
  | 'tool_call_start'
  | 'tool_call_args_delta'
  | 'tool_call_result'
  | 'activity'
  | 'tool_request'
  | 'ask_user_questions'
  | 'ask_user_questions_cancelled'
  | 'message_end'
  | 'error';

export function createWsEvent(
  type: WsEventType,
  sessionId: number | null,
  data: Record<string, unknown>,
  now: () => number = Date.now,
): WsEvent {
  return { type, sessionId, data, timestamp: now() };
}
