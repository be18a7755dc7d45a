/**
 * An event sent from the server to a connected client, in the frozen WebSocket shape of
 * `interface.md`: `{"type","sessionId","data","timestamp"}`.
 */
export interface ClientEvent {
  /** Event name, e.g. `tool_request`, `ask_user_questions`. */
  type: string;
  /** The session the event belongs to, or `null` for connection-level events. */
  sessionId: number | null;
  /** Event payload; its fields depend on `type`. */
  data: Record<string, unknown>;
  /** Milliseconds since the epoch when the event was created. */
  timestamp: number;
}

/**
 * Delivers one event to one client connection. A sink that throws has not delivered the event
 * (the socket closed, the buffer overflowed, …); callers must not let the exception escape.
 */
export type ClientEventSink = (event: ClientEvent) => void;
