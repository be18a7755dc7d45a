/**
 * Tells which run (execution) the calling code belongs to, so that events raised deep inside a
 * run carry its `executionId` and a cancelled run's late requests can be refused. The composition
 * root passes the process's execution scope; harness/local does not depend on where it lives.
 */
export interface ExecutionIdSource {
  /** The current run's id, or `undefined` outside a run. */
  currentExecutionId(): string | undefined;
}

/** For code that never runs inside a run: every call is outside one. */
export const NO_EXECUTION: ExecutionIdSource = { currentExecutionId: () => undefined };
