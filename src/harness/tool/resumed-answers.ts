import type { ApprovalOutcome } from './approval-requests';

/**
 * The answer to a wait that outlived its process (a stored approval, question or desktop
 * request), handed to the dispatcher when the run resumes so the call is settled by it and not
 * asked again.
 */
export type ResumedAnswer =
  /** `approved` runs the call without asking again; any other outcome is the refusal result. */
  | { kind: 'approval'; outcome: Exclude<ApprovalOutcome, 'undelivered'>; reason: string; message?: string }
  /** The person's answers, or why the questions ended unanswered. */
  | { kind: 'question'; answers: unknown }
  | { kind: 'question'; error: string }
  /** The desktop's raw `tool_response`, or an `{"error":…}` string when it never came. */
  | { kind: 'local_tool'; result: string };

/**
 * Answers waiting for their resumed call, by run and call id. The run service puts them just
 * before it resumes a run; the dispatcher takes each once, when the call comes through.
 */
export class ResumedAnswers {
  private readonly answers = new Map<string, ResumedAnswer>();

  put(executionId: string, toolCallId: string, answer: ResumedAnswer): void {
    this.answers.set(key(executionId, toolCallId), answer);
  }

  /** The answer for the call, removed; `undefined` when there is none. */
  take(executionId: string | null | undefined, toolCallId: string): ResumedAnswer | undefined {
    if (executionId == null) return undefined;
    const found = this.answers.get(key(executionId, toolCallId));
    if (found !== undefined) this.answers.delete(key(executionId, toolCallId));
    return found;
  }

  /** Drops what a run left untaken (it ended before the call came through). */
  forgetRun(executionId: string): void {
    for (const stored of [...this.answers.keys()]) if (stored.startsWith(`${executionId}\u0000`)) this.answers.delete(stored);
  }
}

function key(executionId: string, toolCallId: string): string {
  return `${executionId}\u0000${toolCallId}`;
}
