import { randomUUID } from 'node:crypto';
import { AgentExecutionContext } from '../../harness/core/agent-execution-context';
import type { AgentLoop, AgentRunOutcome } from '../../harness/core/agent-loop';
import { ExecutionScope } from '../../harness/runtime/execution-scope';
import type { ChatMessage, ChatUsage, LlmModelConfig } from '../../harness/llm/chat-request';
import type { ToolCallProgress } from '../../harness/tool/tool-call-context';
import type { ToolResultMeta } from '../../harness/tool/tool-result';
import type { LocalToolSessionRegistry } from '../../harness/local/local-tool-session-registry';
import type { AskUserQuestionsRegistry } from '../../harness/tool/ask-user-questions-registry';
import type { ActivityRepository } from '../persistence/activity-repository';
import type { HarnessDatabase } from '../persistence/harness-database';
import type { MessageRepository } from '../persistence/message-repository';
import type { RunRepository, RunStatus } from '../persistence/run-repository';
import type { SessionRecord } from '../persistence/session-repository';
import { RunAlreadyActiveError, ServerStoppingError } from '../service/session-errors';
import type { SessionService } from '../service/session-service';
import type { StreamingWsRegistry } from '../ws/streaming-ws-registry';
import { createErrorEvent } from '../ws/ws-event';
import { WsStreamingEventListener } from '../ws/ws-streaming-event-listener';
import type { SessionToolProvider } from '../service/session-tool-provider';
import { errorMessage } from '../../harness/runtime/error-message';
import type { AgentEventListener } from '../../harness/core/agent-event-listener';
import type { PendingRound } from '../../harness/core/agent-loop';
import type { ToolCall } from '../../harness/llm/chat-request';
import type { ResumedAnswer, ResumedAnswers } from '../../harness/tool/resumed-answers';
import { sameArguments } from '../../harness/tool/approval-requests';
import type { ToolResult } from '../../harness/tool/tool-result';
import type { WaitKind } from '../../harness/runtime/wait-store';
import type { WaitRecord, WaitRepository } from '../persistence/wait-repository';
import type { ClientEvent } from '../../harness/local/client-event';
import { approvalReason, expiredAnswer, isResumedAnswer } from './wait-answers';
import { GenAiAttributes, providerName, startRunSpan, withSpan } from '../../harness/runtime/gen-ai-tracing';

/** Where the run service reports: each run's end, and the failures it survives. */
export interface RunServiceLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface RunServiceDeps {
  agentLoop: AgentLoop;
  sessions: SessionService;
  messages: MessageRepository;
  activities: ActivityRepository;
  runs: RunRepository;
  database: HarnessDatabase;
  wsRegistry: StreamingWsRegistry;
  localSessions: LocalToolSessionRegistry;
  askUserQuestions: AskUserQuestionsRegistry;
  sessionTools: SessionToolProvider;
  modelConfig: LlmModelConfig;
  /** The waits for a person that runs hold; without it, a run never outlives its process. */
  waits?: WaitRepository | null;
  /** Where the answers of stored waits go for the dispatcher when a run resumes. */
  resumedAnswers?: ResumedAnswers | null;
  systemPrompt?: string | null;
  /** Defaults to the console. */
  logger?: RunServiceLogger;
  /**
   * Called once the server has had no run for `afterMs`, after runs: to give back what the burst
   * of work took (pooled threads, garbage). Absent: nothing is done.
   */
  idle?: { afterMs: number; reclaim: () => void };
}

interface ActiveRun {
  executionId: string;
  context: AgentExecutionContext | null;
  cancelled: boolean;
  /** Set when the server stopped the run (shutdown): it ends as a failure naming this. */
  interruption: string | null;
  /**
   * Set when a stopping server left the run waiting for a person: from then on nothing of the
   * run is stored or announced, so the store keeps it as it was, waiting, for the next start.
   */
  detached: boolean;
  done: Promise<void>;
  /** A run resumed after a restart: the calls of its open round that held a stored wait. */
  waited?: ReadonlySet<string>;
}

/** A run that a restart found waiting for a person, until the answers come (or it is cancelled). */
interface ParkedRun {
  executionId: string;
  sessionId: number;
  ownerUserId: number;
  /** One per unanswered wait: its expiry. */
  timers: NodeJS.Timeout[];
}

/** An answer to a wait, as the gateway read it from a client frame. */
export type WaitResponse = { userId: number; sessionId: number; requestId: string } & (
  | { kind: 'approval'; approved: boolean; message?: string; arguments?: unknown; echoesArguments: boolean }
  | { kind: 'question'; answers: unknown }
  | { kind: 'local_tool'; result: string }
);

/** A stored wait as `GET /api/sessions/:id/pending` lists it. */
export interface PendingWaitView {
  requestId: string;
  kind: WaitKind;
  executionId: string;
  toolCallId: string;
  toolName: string;
  arguments: string;
  /** The event the person was sent, as it was sent (with the run's `executionId`). */
  event: { type: string; data: Record<string, unknown> };
  /** ISO-8601. */
  createdAt: string;
  expiresAt: string;
}

const SYSTEM_PROMPT =
  'You are Harness, an agent that works in the user\'s workspace through the tools you are given. ' +
  'Use relative paths. When a tool reports an error, read it and correct your next call.';

/**
 * Runs the agent for a session: one run per session at a time, streamed to the owner's
 * WebSocket connections, every message stored as it happens. A run does not depend on its
 * audience: it goes on when clients disconnect.
 */
export class RunService {
  private readonly logger: RunServiceLogger;
  private readonly active = new Map<number, ActiveRun>();
  /** Runs waiting for a person since a restart, by session. */
  private readonly parked = new Map<number, ParkedRun>();
  /** Set once shutdown began: why no new run starts. */
  private stopping: string | null = null;
  /** Waits for the server to stay without a run for `idle.afterMs`. */
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(private readonly deps: RunServiceDeps) {
    this.logger = deps.logger ?? console;
  }

  /** Stores the user's message and starts the run; throws `RunAlreadyActiveError` if one is going. */
  start(session: SessionRecord, content: string): { executionId: string } {
    if (this.stopping !== null) throw new ServerStoppingError(this.stopping);
    const running = this.active.get(session.id) ?? this.parked.get(session.id);
    if (running) throw new RunAlreadyActiveError(session.id, running.executionId);
    const executionId = randomUUID();
    // One write: a stored message always has its run, and a run that is stored as started and
    // never as ended is one the next start closes (RunRecovery).
    this.deps.database.transaction(() => {
      this.deps.runs.start(executionId, session.id);
      this.deps.messages.append(session.id, executionId, { role: 'user', content });
    });
    this.launch(session, { executionId, context: null, cancelled: false, interruption: null, detached: false, done: Promise.resolve() }, false);
    return { executionId };
  }

  private launch(session: SessionRecord, run: ActiveRun, resuming: boolean): void {
    const { executionId } = run;
    this.active.set(session.id, run);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    run.done = ExecutionScope.run(executionId, () => this.execute(session, run, resuming))
      .catch((error: unknown) => {
        this.logger.error(`run ${executionId} failed: ${describe(error)}`);
        this.endRun(executionId, 'error', errorMessage(error));
      })
      .finally(() => {
        this.deps.resumedAnswers?.forgetRun(executionId);
        if (this.active.get(session.id) === run) this.active.delete(session.id);
        if (this.active.size === 0) this.waitForIdle();
      });
  }

  /** Cancels the session's run, if any, and everything it waits for. */
  cancel(sessionId: number): boolean {
    if (this.parked.has(sessionId)) {
      this.withdrawParked(sessionId);
      return true;
    }
    const run = this.active.get(sessionId);
    this.deps.askUserQuestions.cancelSession(sessionId, 'the run was cancelled');
    this.deps.localSessions.cancelRun(sessionId, run?.executionId, 'the run was cancelled');
    if (!run) return false;
    run.cancelled = true;
    run.context?.cancel();
    return true;
  }

  isActive(sessionId: number): boolean {
    return this.active.has(sessionId) || this.parked.has(sessionId);
  }

  /**
   * What the session's run is doing: `waiting` while it waits for a person (a stored wait without
   * an answer — a live run's or one waiting since a restart), `running` otherwise, `null` when the
   * session has no run going.
   */
  runStatus(sessionId: number): 'running' | 'waiting' | null {
    if (this.parked.has(sessionId)) return 'waiting';
    const run = this.active.get(sessionId);
    if (!run) return null;
    return this.holdsWaits(run.executionId) ? 'waiting' : 'running';
  }

  /**
   * Start-up, after `RunRecovery`: takes up the runs it left waiting. Each waits for its
   * person's answers (and expires on time, as its stored waits say); a run whose waits were all
   * answered (expired while the server was down) resumes at once.
   */
  adoptWaitingRuns(runs: ReadonlyArray<{ executionId: string; sessionId: number; ready: boolean }>): void {
    const waits = this.deps.waits;
    if (!waits) return;
    for (const recovered of runs) {
      const stored = waits.forExecution(recovered.executionId);
      if (stored.length === 0) continue;
      const parked: ParkedRun = { executionId: recovered.executionId, sessionId: recovered.sessionId, ownerUserId: stored[0].ownerUserId, timers: [] };
      this.parked.set(recovered.sessionId, parked);
      this.deps.localSessions.bindSession(recovered.sessionId, parked.ownerUserId);
      if (recovered.ready) {
        this.resumeParked(recovered.sessionId, false);
        continue;
      }
      for (const wait of stored) {
        if (wait.answer !== null) continue;
        const timer = setTimeout(() => this.expireParked(parked, wait.requestId), Math.max(0, wait.expiresAt - Date.now()));
        timer.unref();
        parked.timers.push(timer);
      }
    }
  }

  /** The session's waits that are still unanswered, oldest first (live runs' and waiting runs' alike). */
  pendingWaits(sessionId: number): PendingWaitView[] {
    return (this.deps.waits?.forSession(sessionId) ?? []).filter((wait) => wait.answer === null).map(toView);
  }

  /**
   * The events of the user's unanswered waits of runs waiting since a restart, as first sent
   * (same request ids): what a client of the owner that connects is sent again.
   */
  waitEventsFor(userId: number): ClientEvent[] {
    const events: ClientEvent[] = [];
    for (const parked of this.parked.values()) {
      if (parked.ownerUserId !== userId) continue;
      for (const wait of this.deps.waits?.forExecution(parked.executionId) ?? []) {
        if (wait.answer !== null) continue;
        events.push({ type: wait.eventType, sessionId: wait.sessionId, data: { ...wait.eventData, executionId: wait.executionId }, timestamp: Date.now() });
      }
    }
    return events;
  }

  /**
   * Applies an answer to a wait of a run waiting since a restart; returns `null`, or why it was
   * refused — then nothing changed. Checked as the live wait checks it: only the session's
   * owner, for that session and request id, of the same kind, once; an approval that echoes
   * `arguments` must echo the stored ones. Once every wait of the run has its answer, the run
   * resumes from the stored conversation.
   */
  answerWait(response: WaitResponse): string | null {
    const waits = this.deps.waits;
    const wait = waits?.find(response.requestId) ?? null;
    const parked = this.parked.get(response.sessionId);
    if (
      !waits ||
      !wait ||
      !parked ||
      wait.kind !== response.kind ||
      wait.sessionId !== response.sessionId ||
      wait.ownerUserId !== response.userId ||
      wait.executionId !== parked.executionId ||
      wait.answer !== null
    ) {
      return notPending(response.kind, response.requestId, response.sessionId);
    }
    let answer: ResumedAnswer;
    if (response.kind === 'approval') {
      if (response.echoesArguments && !sameArguments(response.arguments, wait.argumentsJson)) {
        return `The answer to approval request '${response.requestId}' names other arguments than the call: an answer cannot change a call`;
      }
      answer = { kind: 'approval', outcome: response.approved ? 'approved' : 'denied', reason: approvalReason(wait), ...(response.message !== undefined ? { message: response.message } : {}) };
    } else if (response.kind === 'question') {
      answer = { kind: 'question', answers: response.answers };
    } else {
      answer = { kind: 'local_tool', result: response.result };
    }
    if (!waits.setAnswer(wait.requestId, answer)) return notPending(response.kind, response.requestId, response.sessionId);
    if (answer.kind === 'approval') this.announceEnd(wait, answer.outcome, answer.message);
    this.resumeWhenAnswered(parked);
    return null;
  }

  /** Resolves when the session's current run (if any) has ended. */
  async whenIdle(sessionId: number): Promise<void> {
    await this.active.get(sessionId)?.done;
  }

  /**
   * Server shutdown: refuses new runs, stops every active one — each ends with a final `error`
   * event naming `reason`, so its watchers know it is over — and waits for them to end, at most
   * `timeoutMs`. Resolves `false` if some run had not ended by then (it is recorded as
   * `interrupted` at the next start).
   */
  async shutdown(reason = 'the server is shutting down', timeoutMs = 5000): Promise<boolean> {
    this.stopping = reason;
    for (const parked of this.parked.values()) for (const timer of parked.timers) clearTimeout(timer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    for (const [sessionId, run] of this.active) {
      // A run waiting for a person stays waiting, stored as it is, for the next start.
      if (this.holdsWaits(run.executionId)) this.detach(sessionId, run);
      this.deps.askUserQuestions.cancelSession(sessionId, reason);
      this.deps.localSessions.cancelRun(sessionId, run.executionId, reason);
      run.interruption = reason;
      run.context?.interrupt(reason);
    }
    const ended = Promise.all([...this.active.values()].map((run) => run.done)).then(() => true);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([ended, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Whether the run has a stored wait still waiting for its answer. */
  private holdsWaits(executionId: string): boolean {
    return (this.deps.waits?.forExecution(executionId) ?? []).some((wait) => wait.answer === null);
  }

  /**
   * Leaves the run to the next start, waiting: its waits stay stored, it is recorded `waiting`,
   * and what stopping undoes in memory (its waits withdrawn, the run interrupted) is neither
   * stored nor sent.
   */
  private detach(sessionId: number, run: ActiveRun): void {
    this.deps.waits?.keepAll();
    run.detached = true;
    this.deps.wsRegistry.mute(sessionId);
    try {
      this.deps.runs.mark(run.executionId, 'waiting');
    } catch (error) {
      this.logger.warn(`run ${run.executionId}: not recorded as waiting: ${describe(error)}`);
    }
    this.logger.log(`run ${run.executionId} of session ${sessionId} waits for a person: kept for the next start`);
  }

  /** A stored wait of a waiting run expired: it gets its timeout answer, said as the live wait says it. */
  private expireParked(parked: ParkedRun, requestId: string): void {
    if (this.parked.get(parked.sessionId) !== parked || this.stopping !== null) return;
    const wait = this.deps.waits?.find(requestId);
    if (!wait || wait.answer !== null || !this.deps.waits?.setAnswer(requestId, expiredAnswer(wait))) return;
    const waitedMs = wait.expiresAt - wait.createdAt;
    // The words the live wait would have used: a desktop request says it timed out.
    this.announceEnd(wait, 'expired', wait.kind === 'local_tool' ? `Local tool '${wait.toolName}' timed out after ${waitedMs} ms` : `no answer within ${waitedMs} ms`);
    this.resumeWhenAnswered(parked);
  }

  /** Cancelling a waiting run: its waits are withdrawn (and said so), and the run closes its round and ends cancelled. */
  private withdrawParked(sessionId: number): void {
    const parked = this.parked.get(sessionId);
    if (!parked) return;
    for (const wait of this.deps.waits?.forExecution(parked.executionId) ?? []) {
      if (wait.answer === null) this.announceEnd(wait, 'withdrawn', 'the run was cancelled');
    }
    this.resumeParked(sessionId, true);
  }

  /** Tells the owner's clients how a stored wait ended, with the event its live kind uses. */
  private announceEnd(wait: WaitRecord, outcome: 'approved' | 'denied' | 'expired' | 'withdrawn', message: string | undefined): void {
    const { localSessions } = this.deps;
    const executionId = wait.executionId;
    if (wait.kind === 'approval') {
      localSessions.sendToSession(wait.sessionId, 'approval_resolved', { requestId: wait.requestId, outcome, ...(message !== undefined ? { message } : {}), executionId });
    } else if (outcome === 'expired' || outcome === 'withdrawn') {
      if (wait.kind === 'question') localSessions.sendToSession(wait.sessionId, 'ask_user_questions_cancelled', { requestId: wait.requestId, executionId });
      else localSessions.sendToSession(wait.sessionId, 'tool_request_cancelled', { requestId: wait.requestId, reason: message ?? outcome, executionId });
    }
  }

  private resumeWhenAnswered(parked: ParkedRun): void {
    const waits = this.deps.waits?.forExecution(parked.executionId) ?? [];
    if (waits.every((wait) => wait.answer !== null)) this.resumeParked(parked.sessionId, false);
  }

  /**
   * Resumes a waiting run: the answers go to the dispatcher, the stored waits are removed, and
   * the run goes on from the stored conversation (`cancelled`: closes its round and ends).
   */
  private resumeParked(sessionId: number, cancelled: boolean): void {
    const parked = this.parked.get(sessionId);
    if (!parked) return;
    this.parked.delete(sessionId);
    for (const timer of parked.timers) clearTimeout(timer);
    const { executionId } = parked;
    const waits = this.deps.waits;
    const waited = new Set<string>();
    for (const wait of waits?.forExecution(executionId) ?? []) {
      if (!cancelled && isResumedAnswer(wait.answer)) this.deps.resumedAnswers?.put(executionId, wait.toolCallId, wait.answer);
      waited.add(wait.toolCallId);
      waits?.delete(wait.requestId);
    }
    let session: SessionRecord;
    try {
      session = this.deps.sessions.getOwned(sessionId, parked.ownerUserId);
      this.deps.runs.mark(executionId, 'running');
    } catch (error) {
      this.logger.error(`run ${executionId} could not resume: ${describe(error)}`);
      this.endRun(executionId, 'error', errorMessage(error));
      return;
    }
    this.logger.log(`run ${executionId} of session ${sessionId} resumes${cancelled ? ', cancelled' : ''}`);
    this.launch(session, { executionId, context: null, cancelled, interruption: null, detached: false, done: Promise.resolve(), waited }, true);
  }

  /** The open round of a resumed run: its calls, the results stored for them, and those already announced. */
  private pendingRound(sessionId: number, executionId: string, waited: ReadonlySet<string> = new Set()): PendingRound | null {
    const stored = this.deps.messages.listBySession(sessionId);
    const last = stored.at(-1);
    if (!last || last.role !== 'assistant' || last.executionId !== executionId || !last.toolCalls?.length) return null;
    const settled = new Map<string, ToolResult>();
    for (const [callId, result] of this.deps.messages.stagedToolResults(executionId)) {
      settled.set(callId, {
        callId,
        status: result.isError ? 'error' : 'success',
        content: result.content ?? '',
        ...(result.attachments ? { attachments: result.attachments } : {}),
      });
    }
    const announced = new Set(
      this.deps.activities
        .listBySession(sessionId)
        .filter((activity) => activity.executionId === executionId && activity.createdAt >= last.createdAt)
        .map((activity) => activity.toolCallId),
    );
    return { calls: last.toolCalls as ToolCall[], settled, announced, waited };
  }

  /** Once no run has started for `idle.afterMs`, calls `idle.reclaim`. */
  private waitForIdle(): void {
    const idle = this.deps.idle;
    if (!idle || this.stopping !== null || this.idleTimer) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.active.size > 0 || this.stopping !== null) return;
      try {
        idle.reclaim();
      } catch (error) {
        this.logger.warn(`reclaiming memory when idle failed: ${errorMessage(error)}`);
      }
    }, idle.afterMs);
    // Nothing to wait for on its own: a server that stops need not reclaim anything.
    this.idleTimer.unref();
  }

  private async execute(session: SessionRecord, run: ActiveRun, resuming = false): Promise<void> {
    const { deps } = this;
    deps.localSessions.bindSession(session.id, session.userId);
    const listener = new WsStreamingEventListener({
      registry: deps.wsRegistry,
      activities: deps.activities,
      userId: session.userId,
      sessionId: session.id,
      executionId: run.executionId,
      logger: this.logger,
      markFinalErrors: true,
    });
    // The session's MCP servers stay up for the whole run, however long it pauses between calls.
    const releaseMcp = deps.sessionTools.hold(session);
    // A run left waiting by a stopping server says nothing more (see `detach`).
    const gated = gateListener(listener, () => run.detached);
    // The run's `invoke_agent` span: its model and tool calls nest under it (docs/observability.md).
    const trace = startRunSpan(run.executionId, {
      [GenAiAttributes.CONVERSATION_ID]: String(session.id),
      [GenAiAttributes.PROVIDER_NAME]: providerName(deps.modelConfig.protocol),
      [GenAiAttributes.REQUEST_MODEL]: deps.modelConfig.model,
    });
    try {
      const outcome = await withSpan(trace.span, () => this.runAgent(session, run, gated, resuming));
      trace.end(
        outcome === null
          ? { status: 'waiting' }
          : {
              status: outcome.status,
              rounds: outcome.rounds,
              usage: outcome.usage && { inputTokens: outcome.usage.promptTokens, outputTokens: outcome.usage.completionTokens },
              error: outcome.error,
            },
      );
    } catch (error) {
      trace.end({ status: 'error', error: errorMessage(error) });
      throw error;
    } finally {
      releaseMcp();
    }
  }

  /** Runs (or resumes) the agent; `null` when the run was left waiting by a stopping server. */
  private async runAgent(session: SessionRecord, run: ActiveRun, listener: AgentEventListener, resuming: boolean): Promise<AgentRunOutcome | null> {
    const { deps } = this;
    const sessionTools = await deps.sessionTools.forSession(session);
    for (const problem of sessionTools.problems) {
      this.logger.warn(`session ${session.id}: ${problem}`);
      deps.wsRegistry.sendToUser(session.userId, createErrorEvent(session.id, problem, false, run.executionId));
    }
    const context = new AgentExecutionContext({
      executionId: run.executionId,
      sessionId: session.id,
      userId: session.userId,
      executionMode: session.executionMode,
      // A LOCAL session's tools run on the desktop, which knows the workspace by its name;
      // the server's own folder for it means nothing there.
      workspace: session.executionMode === 'LOCAL' ? session.workspace : deps.sessions.workspacePath(session),
      permissionLevel: session.permissionLevel,
      modelConfig: deps.modelConfig,
      sessionTools: sessionTools.tools,
      allowedTools: session.tools,
      systemPrompt: deps.systemPrompt === undefined ? SYSTEM_PROMPT : deps.systemPrompt,
      messages: deps.messages.toChatMessages(session.id),
    });
    run.context = context;
    if (run.interruption !== null) context.interrupt(run.interruption);
    else if (run.cancelled) context.cancel();
    const persistence = {
      saveAssistantMessage: (message: ChatMessage) => {
        if (!run.detached) deps.messages.append(session.id, run.executionId, message);
      },
      // Each result is staged as its call finishes; the round's batch then lands in call order.
      saveToolResult: (message: ChatMessage) => {
        if (!run.detached) deps.messages.stageToolResult(run.executionId, message);
      },
      saveToolMessages: (messages: ChatMessage[]) => {
        if (!run.detached) deps.messages.appendRound(session.id, run.executionId, messages);
      },
    };
    const round = resuming ? this.pendingRound(session.id, run.executionId, run.waited) : null;
    const outcome = round
      ? await deps.agentLoop.resume(context, listener, persistence, round)
      : await deps.agentLoop.execute(context, listener, persistence);
    if (run.detached) return null;
    this.endRun(run.executionId, outcome.status, outcome.error ?? null);
    this.logger.log(`run ${run.executionId} of session ${session.id}: ${outcome.status} after ${outcome.rounds} round(s)`);
    return outcome;
  }

  /** Records how a run ended; a store that fails here leaves the run to the next start's recovery. */
  private endRun(executionId: string, status: Exclude<RunStatus, 'running' | 'waiting'>, error: string | null): void {
    try {
      this.deps.runs.end(executionId, status, error);
    } catch (failure) {
      this.logger.warn(`run ${executionId}: its end was not recorded: ${describe(failure)}`);
    }
  }
}

/** The listener, silent while `silenced` says so. A class, not a proxy: this is every event's path. */
function gateListener(listener: AgentEventListener, silenced: () => boolean): AgentEventListener {
  return new GatedListener(listener, silenced);
}

class GatedListener implements AgentEventListener {
  constructor(
    private readonly listener: AgentEventListener,
    private readonly silenced: () => boolean,
  ) {}

  onContentDelta(delta: string): void {
    if (!this.silenced()) this.listener.onContentDelta(delta);
  }

  onThinkingStart(): void {
    if (!this.silenced()) this.listener.onThinkingStart?.();
  }

  onThinkingDelta(delta: string): void {
    if (!this.silenced()) this.listener.onThinkingDelta?.(delta);
  }

  onThinkingEnd(): void {
    if (!this.silenced()) this.listener.onThinkingEnd?.();
  }

  onToolCallStart(toolCallId: string, toolName: string, argumentsJson: string): void {
    if (!this.silenced()) this.listener.onToolCallStart(toolCallId, toolName, argumentsJson);
  }

  onToolCallArgsDelta(toolCallId: string, argumentsDelta: string): void {
    if (!this.silenced()) this.listener.onToolCallArgsDelta?.(toolCallId, argumentsDelta);
  }

  onToolCallProgress(toolCallId: string, progress: ToolCallProgress): void {
    if (!this.silenced()) this.listener.onToolCallProgress?.(toolCallId, progress);
  }

  onToolCallResult(toolCallId: string, result: string, meta?: ToolResultMeta): void {
    if (!this.silenced()) this.listener.onToolCallResult(toolCallId, result, meta);
  }

  onMessageEnd(usage: ChatUsage | null): void {
    if (!this.silenced()) this.listener.onMessageEnd(usage);
  }

  onError(message: string): void {
    if (!this.silenced()) this.listener.onError(message);
  }
}

function notPending(kind: WaitKind, requestId: string, sessionId: number): string {
  switch (kind) {
    case 'approval':
      return `No pending approval request '${requestId}' for session ${sessionId}`;
    case 'question':
      return `No pending questions '${requestId}' for session ${sessionId}`;
    case 'local_tool':
      return `No pending tool request '${requestId}' for session ${sessionId}`;
  }
}

function toView(wait: WaitRecord): PendingWaitView {
  return {
    requestId: wait.requestId,
    kind: wait.kind,
    executionId: wait.executionId,
    toolCallId: wait.toolCallId,
    toolName: wait.toolName,
    arguments: wait.argumentsJson,
    event: { type: wait.eventType, data: { ...wait.eventData, executionId: wait.executionId } },
    createdAt: new Date(wait.createdAt).toISOString(),
    expiresAt: new Date(wait.expiresAt).toISOString(),
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
