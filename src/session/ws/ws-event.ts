/**
 * The server → client WebSocket event (interface.md): its shape is frozen, fields are only added.
 * `data.executionId` is present on every event that belongs to a run.
 */
export interface WsEvent {
  type: WsEventType;
  sessionId: number | null;
  data: Record<string, unknown>;
  timestamp: number;
  /**
   * Added: the event's number in its session's event log — from 1, one more for each event of
   * the session, continuing across restarts. Set by the registry's log on every event of a
   * session; an event of no session, and a reply to a client's frame, have none.
   */
  seq?: number;
}

export type WsEventType =
  | 'content_delta'
  | 'thinking_start'
  | 'thinking_delta'
  | 'thinking_end'
  | 'tool_call_start'
  | 'tool_call_args_delta'
  | 'tool_call_progress'
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

/**
 * An `error` event. `final` says whether it ended a run (interface.md): `true` only for the last
 * event of a run that failed; a problem reported beside a run or about a client frame is `false`.
 */
export function createErrorEvent(sessionId: number | null, message: string, final: boolean, executionId?: string): WsEvent {
  return createWsEvent('error', sessionId, executionId === undefined ? { message, final } : { message, final, executionId });
}
