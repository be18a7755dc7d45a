import { randomUUID } from 'node:crypto';
import { AgentExecutionContext } from '../../harness/core/agent-execution-context';
import type { AgentLoop, AgentRunOutcome } from '../../harness/core/agent-loop';
import { ExecutionScope } from '../../harness/runtime/execution-scope';
import type { LlmModelConfig } from '../../harness/llm/chat-request';
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
  done: Promise<void>;
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
    const running = this.active.get(session.id);
    if (running) throw new RunAlreadyActiveError(session.id, running.executionId);
    const executionId = randomUUID();
    // One write: a stored message always has its run, and a run that is stored as started and
    // never as ended is one the next start closes (RunRecovery).
    this.deps.database.transaction(() => {
      this.deps.runs.start(executionId, session.id);
      this.deps.messages.append(session.id, executionId, { role: 'user', content });
    });
    const run: ActiveRun = { executionId, context: null, cancelled: false, interruption: null, done: Promise.resolve() };
    this.active.set(session.id, run);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    run.done = ExecutionScope.run(executionId, () => this.execute(session, run))
      .catch((error: unknown) => {
        this.logger.error(`run ${executionId} failed: ${describe(error)}`);
        this.endRun(executionId, 'error', errorMessage(error));
      })
      .finally(() => {
        if (this.active.get(session.id) === run) this.active.delete(session.id);
        if (this.active.size === 0) this.waitForIdle();
      });
    return { executionId };
  }

  /** Cancels the session's run, if any, and everything it waits for. */
  cancel(sessionId: number): boolean {
    const run = this.active.get(sessionId);
    this.deps.askUserQuestions.cancelSession(sessionId, 'the run was cancelled');
    this.deps.localSessions.cancelRun(sessionId, run?.executionId, 'the run was cancelled');
    if (!run) return false;
    run.cancelled = true;
    run.context?.cancel();
    return true;
  }

  isActive(sessionId: number): boolean {
    return this.active.has(sessionId);
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
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    for (const [sessionId, run] of this.active) {
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

  private async execute(session: SessionRecord, run: ActiveRun): Promise<void> {
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
    // The run's `invoke_agent` span: its model and tool calls nest under it (docs/observability.md).
    const trace = startRunSpan(run.executionId, {
      [GenAiAttributes.CONVERSATION_ID]: String(session.id),
      [GenAiAttributes.PROVIDER_NAME]: providerName(deps.modelConfig.protocol),
      [GenAiAttributes.REQUEST_MODEL]: deps.modelConfig.model,
    });
    try {
      const outcome = await withSpan(trace.span, () => this.runAgent(session, run, listener));
      trace.end({
        status: outcome.status,
        rounds: outcome.rounds,
        usage: outcome.usage && { inputTokens: outcome.usage.promptTokens, outputTokens: outcome.usage.completionTokens },
        error: outcome.error,
      });
    } catch (error) {
      trace.end({ status: 'error', error: errorMessage(error) });
      throw error;
    } finally {
      releaseMcp();
    }
  }

  private async runAgent(session: SessionRecord, run: ActiveRun, listener: WsStreamingEventListener): Promise<AgentRunOutcome> {
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
    const outcome = await deps.agentLoop.execute(context, listener, {
      saveAssistantMessage: (message) => {
        deps.messages.append(session.id, run.executionId, message);
      },
      // Each result is staged as its call finishes; the round's batch then lands in call order.
      saveToolResult: (message) => deps.messages.stageToolResult(run.executionId, message),
      saveToolMessages: (messages) => {
        deps.messages.appendRound(session.id, run.executionId, messages);
      },
    });
    this.endRun(run.executionId, outcome.status, outcome.error ?? null);
    this.logger.log(`run ${run.executionId} of session ${session.id}: ${outcome.status} after ${outcome.rounds} round(s)`);
    return outcome;
  }

  /** Records how a run ended; a store that fails here leaves the run to the next start's recovery. */
  private endRun(executionId: string, status: Exclude<RunStatus, 'running'>, error: string | null): void {
    try {
      this.deps.runs.end(executionId, status, error);
    } catch (failure) {
      this.logger.warn(`run ${executionId}: its end was not recorded: ${describe(failure)}`);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
