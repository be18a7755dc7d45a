/** The session does not exist, or belongs to another user (both look the same from outside). */
export class SessionNotFoundError extends Error {
  override readonly name = 'SessionNotFoundError';
  constructor(readonly sessionId: number) {
    super(`Session ${sessionId} not found`);
  }
}

/** A request names something that does not exist; `field` says which part of the body. */
export class InvalidSessionInputError extends Error {
  override readonly name = 'InvalidSessionInputError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** The session already has a run in progress (one run per session at a time). */
export class RunAlreadyActiveError extends Error {
  override readonly name = 'RunAlreadyActiveError';
  constructor(
    readonly sessionId: number,
    readonly executionId: string,
  ) {
    super(`Session ${sessionId} already has an active run (${executionId})`);
  }
}

/** The server is shutting down and starts no new run. */
export class ServerStoppingError extends Error {
  override readonly name = 'ServerStoppingError';
  constructor(readonly reason: string) {
    super(`The server is not starting new runs: ${reason}`);
  }
}

/** The session cannot be deleted now: `reason` says what of it is still running. */
export class SessionBusyError extends Error {
  override readonly name = 'SessionBusyError';
  constructor(
    readonly sessionId: number,
    readonly reason: string,
  ) {
    super(`Session ${sessionId} cannot be deleted while ${reason}`);
  }
}
