/** No connection of the session owner accepted the request (none open, or every send failed). */
export class NoConnectedClientError extends Error {
  override readonly name = 'NoConnectedClientError';
  constructor(readonly sessionId: number) {
    super(`No connected desktop client for session ${sessionId}`);
  }
}

/** Every connection that received a pending request closed before answering it. */
export class LocalClientDisconnectedError extends Error {
  override readonly name = 'LocalClientDisconnectedError';
  constructor(
    readonly requestId: string,
    readonly toolName: string,
  ) {
    super(`Desktop client disconnected while running '${toolName}'`);
  }
}

/** The desktop client did not answer a tool request in time. */
export class LocalToolTimeoutError extends Error {
  override readonly name = 'LocalToolTimeoutError';
  constructor(
    readonly requestId: string,
    readonly toolName: string,
    readonly timeoutMs: number,
  ) {
    super(`Local tool '${toolName}' timed out after ${timeoutMs} ms`);
  }
}

/** The session's run was cancelled: its tools may not start on the desktop any more. */
export class LocalRunCancelledError extends Error {
  override readonly name = 'LocalRunCancelledError';
  constructor(
    readonly sessionId: number,
    reason: string,
  ) {
    super(`Not sent to the desktop: ${reason}`);
  }
}

/**
 * `addConnection` or `removeConnection` was called on a `LocalToolSessionRegistry` whose
 * connections come from the `ClientConnections` it was given (the WebSocket registry): register
 * the connection there instead.
 */
export class ConnectionsManagedElsewhereError extends Error {
  override readonly name = 'ConnectionsManagedElsewhereError';
  constructor(readonly connectionId: string) {
    super(`Connection '${connectionId}' cannot be added or removed here: this registry's connections come from the ClientConnections it was given`);
  }
}
