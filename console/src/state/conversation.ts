import type { Attachment } from '../api/wire';

/**
 * What the session view shows, built from the session's event log (and, for the prompts, its
 * stored messages). Plain immutable data: a change makes new objects along its path only, so
 * the view redraws only what changed.
 */
export interface Conversation {
  /** The runs, oldest first. */
  runs: RunView[];
  /** The `seq` of the first event the log still held when the view was built, if any. */
  firstSeq: number | null;
}

export type RunState = 'running' | 'finished' | 'failed' | 'interrupted';

/** One run: the user's message and everything the agent did for it. */
export interface RunView {
  executionId: string;
  /** The user's message that started the run; null until it is known. */
  prompt: string | null;
  items: RunItem[];
  state: RunState;
  /** Why the run failed (a final `error`), or why it was interrupted. */
  error: string | null;
  usage: Usage | null;
  /** Whether one of its calls was cancelled with the run. */
  cancelled: boolean;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** A piece of a run, in the order it happened. `key` is stable for the piece's lifetime. */
export type RunItem =
  | { kind: 'text'; key: string; text: string }
  | { kind: 'thinking'; key: string; text: string; done: boolean }
  | { kind: 'tool'; key: string; call: ToolCallView }
  | { kind: 'questions'; key: string; questions: QuestionsView }
  | { kind: 'notice'; key: string; message: string };

export type ToolCallStatus = 'running' | 'success' | 'error' | 'cancelled';

/** One tool call, as its card shows it. */
export interface ToolCallView {
  callId: string;
  toolName: string;
  /** The arguments JSON, as streamed so far. */
  arguments: string;
  status: ToolCallStatus;
  /** Event timestamps (ms): when the call appeared and when its result came. */
  startedAt: number;
  endedAt: number | null;
  progress: { progress: number; total?: number; message?: string } | null;
  /** The text the model read. */
  result: string | null;
  summary: string | null;
  attachments: Attachment[];
  approval: ApprovalView | null;
  /** LOCAL sessions: the request the desktop app answers. */
  desktop: DesktopRequestView | null;
}

/** A call as it first appears: its name and arguments, nothing else known yet. */
export function newToolCall(callId: string, toolName: string, args: string, status: ToolCallStatus, startedAt: number): ToolCallView {
  return { callId, toolName, arguments: args, status, startedAt, endedAt: null, progress: null, result: null, summary: null, attachments: [], approval: null, desktop: null };
}

export type ApprovalOutcome = 'pending' | 'approved' | 'denied' | 'expired' | 'withdrawn' | 'undelivered';

export interface ApprovalView {
  requestId: string;
  reason: string;
  outcome: ApprovalOutcome;
  message: string | null;
  /** When the server stops waiting (ISO-8601), if it said. */
  expiresAt: string | null;
}

export interface DesktopRequestView {
  requestId: string;
  needApproval: boolean;
  dangerReason: string | null;
  /** `withdrawn`: the server stopped waiting (`tool_request_cancelled`); else waiting or answered. */
  withdrawnBecause: string | null;
}

export interface Question {
  question: string;
  options?: string[];
  multiSelect?: boolean;
}

export interface QuestionsView {
  requestId: string;
  questions: Question[];
  /** `closed`: the run ended without them being answered. */
  state: 'pending' | 'answered' | 'cancelled' | 'closed';
  /** The answers, once the model has read them. */
  answers: unknown;
}

export const EMPTY_CONVERSATION: Conversation = { runs: [], firstSeq: null };

/** The result text of a call the run's cancellation stopped (the agent loop's words). */
export const CANCELLED_RESULT_PREFIX = 'Tool execution cancelled';
