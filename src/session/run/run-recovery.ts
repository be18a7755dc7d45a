import { toolResultMessage } from '../../harness/core/agent-execution-context';
import { INTERRUPTED_TOOL_RESULT } from '../../harness/core/agent-loop';
import type { ChatAttachment, ChatMessage, ToolCall } from '../../harness/llm/chat-request';
import { describeToolActivity } from '../persistence/activity-describer';
import type { ActivityRepository } from '../persistence/activity-repository';
import type { HarnessDatabase } from '../persistence/harness-database';
import type { MessageRecord, MessageRepository } from '../persistence/message-repository';
import type { RunRepository } from '../persistence/run-repository';
import type { WaitRepository } from '../persistence/wait-repository';
import { expiredAnswer } from './wait-answers';

export { INTERRUPTED_TOOL_RESULT };
/** Why a run found unfinished at start was closed. */
export const INTERRUPTED_RUN_REASON = 'the server stopped before the run finished';

export interface RunRecoveryDeps {
  database: HarnessDatabase;
  runs: RunRepository;
  messages: MessageRepository;
  activities: ActivityRepository;
  /** The waits runs were holding; without it every unfinished run is closed as interrupted. */
  waits?: WaitRepository | null;
  /** Milliseconds since the epoch, for expiry (default `Date.now`). */
  now?: () => number;
}

/** What closing one unfinished run did. */
export interface RecoveredRun {
  executionId: string;
  sessionId: number;
  /** Calls that had no result: each got an error tool message and an activity. */
  unansweredCalls: string[];
  /** Calls that had finished: their staged result joined the conversation, with an activity. */
  finishedCalls: string[];
  /**
   * The run waits for a person (it had stored waits): recorded as `waiting`, its round left open
   * for the run to resume, which settles the round's other unfinished calls (`AgentLoop.resume`).
   * Absent for a run that was closed.
   */
  waiting?: true;
  /** For a waiting run: every wait has its answer (some expired while the server was down), so it can resume now. */
  ready?: boolean;
}

/**
 * Closes, at start-up, the runs a previous process left unfinished (killed, crashed, lost power).
 * Each such run's last round is completed in the store the way the loop completes a cancelled
 * round: a call that had finished gets the result it staged, a call that had not gets an error
 * result (status `error`), each with an activity, all in call order; the run is recorded as
 * `interrupted`. The session then takes new messages, and the
 * conversation it sends to a provider answers every call.
 */
export class RunRecovery {
  constructor(private readonly deps: RunRecoveryDeps) {}

  /**
   * Closes every unfinished run, each in one transaction — except a run that holds stored waits,
   * which is left `waiting` for its person's answer — and drops the waits of runs that ended.
   */
  recoverAll(): RecoveredRun[] {
    const recovered = this.deps.runs.listRunning().map((run) => this.deps.database.transaction(() => this.recover(run.executionId, run.sessionId)));
    this.deps.waits?.dropOrphans();
    return recovered;
  }

  private recover(executionId: string, sessionId: number): RecoveredRun {
    const { messages, activities, runs } = this.deps;
    const recovered: RecoveredRun = { executionId, sessionId, unansweredCalls: [], finishedCalls: [] };
    const stored = messages.listBySession(sessionId).filter((message) => message.executionId === executionId);
    const lastCalls = lastAssistantWithCalls(stored);
    if (lastCalls && this.keepWaiting(executionId, stored, lastCalls, recovered)) return recovered;
    if (lastCalls) {
      const answered = new Set<string>();
      for (const message of stored.slice(lastCalls.index + 1)) {
        if (message.role === 'tool' && message.toolCallId !== undefined) answered.add(message.toolCallId);
      }
      const staged = messages.stagedToolResults(executionId);
      // Results of the round that had already been streamed have their activity: the round
      // records it as it applies each result in call order. (An id can come back in a later
      // round, so only activities from this round's start count.)
      const roundStart = stored[lastCalls.index].createdAt;
      const audited = new Set(
        activities
          .listBySession(sessionId)
          .filter((activity) => activity.executionId === executionId && activity.createdAt >= roundStart)
          .map((activity) => activity.toolCallId),
      );
      const round: ChatMessage[] = [];
      for (const call of lastCalls.calls) {
        if (answered.has(call.id)) continue;
        const result = staged.get(call.id);
        if (result) {
          round.push(toolResultMessage(call.id, call.function.name, result.content ?? '', result.isError, { attachments: result.attachments }));
          if (!audited.has(call.id)) this.audit(executionId, sessionId, call, result.content ?? '', result.isError, undefined, result.attachments);
          recovered.finishedCalls.push(call.id);
        } else {
          round.push(toolResultMessage(call.id, call.function.name, INTERRUPTED_TOOL_RESULT, true));
          this.audit(executionId, sessionId, call, INTERRUPTED_TOOL_RESULT, true, INTERRUPTED_RUN_REASON);
          recovered.unansweredCalls.push(call.id);
        }
      }
      // In call order, as the round would have stored them.
      messages.appendRound(sessionId, executionId, round);
    }
    runs.end(executionId, 'interrupted', INTERRUPTED_RUN_REASON);
    return recovered;
  }

  /**
   * Leaves the run waiting when it holds stored waits for calls of its open round: a wait that
   * expired while the server was down gets its timeout answer. The round's other calls without a
   * result are left as they are: when the run resumes, a call that never started runs and one
   * that may have been running gets the interrupted result (`AgentLoop.resume`). Returns whether
   * the run waits.
   */
  private keepWaiting(executionId: string, stored: MessageRecord[], lastCalls: { index: number; calls: ToolCall[] }, recovered: RecoveredRun): boolean {
    const waitStore = this.deps.waits;
    if (!waitStore) return false;
    const waits = waitStore.forExecution(executionId);
    const answered = new Set(stored.slice(lastCalls.index + 1).flatMap((message) => (message.role === 'tool' && message.toolCallId ? [message.toolCallId] : [])));
    const open = new Set(lastCalls.calls.map((call) => call.id).filter((id) => !answered.has(id)));
    const live = waits.filter((wait) => open.has(wait.toolCallId));
    for (const wait of waits) if (!live.includes(wait)) waitStore.delete(wait.requestId);
    if (live.length === 0) return false;
    const now = (this.deps.now ?? Date.now)();
    for (const wait of live) {
      if (wait.answer === null && wait.expiresAt <= now && waitStore.setAnswer(wait.requestId, expiredAnswer(wait))) wait.answer = expiredAnswer(wait);
    }
    this.deps.runs.mark(executionId, 'waiting');
    recovered.waiting = true;
    recovered.ready = live.every((wait) => wait.answer !== null);
    return true;
  }

  private audit(
    executionId: string,
    sessionId: number,
    call: ToolCall,
    result: string,
    isError: boolean,
    errorMessage?: string,
    attachments?: ChatAttachment[],
  ): void {
    const described = describeToolActivity(call.function.name, call.function.arguments, result, isError, errorMessage ? { errorMessage } : undefined);
    this.deps.activities.record({
      sessionId,
      executionId,
      toolCallId: call.id,
      toolName: call.function.name,
      ...described,
      status: isError ? 'ERROR' : 'SUCCESS',
      metadata: errorMessage
        ? { errorMessage, interrupted: true }
        : { recoveredAtStart: true, ...(attachments && attachments.length > 0 ? { attachments } : {}) },
    });
  }
}

/** The run's last assistant message that called tools, if no later assistant message follows it. */
function lastAssistantWithCalls(messages: MessageRecord[]): { index: number; calls: ToolCall[] } | null {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message.role !== 'assistant') continue;
    return message.toolCalls && message.toolCalls.length > 0 ? { index, calls: message.toolCalls } : null;
  }
  return null;
}
