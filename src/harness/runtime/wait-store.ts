/** The three ways a run waits for a person. */
export type WaitKind = 'approval' | 'question' | 'local_tool';

/**
 * One wait for a person, as stored when it is created: enough to show it again after a restart
 * (the event as it was first sent) and to check and apply its answer (session, run, call, owner).
 */
export interface StoredWait {
  /** The id the person answers with, as in the event. */
  requestId: string;
  kind: WaitKind;
  sessionId: number;
  /** The run that waits. */
  executionId: string;
  /** The tool call the wait holds. */
  toolCallId: string;
  toolName: string;
  /** The call's arguments exactly as the model wrote them. */
  argumentsJson: string;
  /** The only user whose answer counts: the session's owner. */
  ownerUserId: number;
  /** The event the person was sent (`approval_request`, `ask_user_questions`, `tool_request`) … */
  eventType: string;
  /** … and its data, as first sent (without `executionId`, which is the run's). */
  eventData: Record<string, unknown>;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** Milliseconds since the epoch: past it, the wait ends with its timeout result. */
  expiresAt: number;
}

/**
 * Where pending waits are kept while they wait, so that a run waiting for a person outlives its
 * process. Written by the three wait paths (approvals, questions, desktop tool requests) when a
 * wait is created and removed when it ends. Writes never throw: a store that fails loses only
 * the wait's survival of a restart, never the wait itself.
 */
export interface WaitStore {
  save(wait: StoredWait): void;
  remove(requestId: string): void;
}
