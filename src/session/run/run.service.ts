import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { AgentExecutionContext } from '../../harness/core/agent-execution-context';
import type { AgentLoop } from '../../harness/core/agent-loop';
import { ExecutionScope } from '../../harness/core/execution-scope';
import type { LlmModelConfig } from '../../harness/llm/chat-request';
import type { LocalToolSessionRegistry } from '../../harness/local/local-tool-session-registry';
import type { AskUserQuestionsRegistry } from '../../harness/tool/ask-user-questions-registry';
import type { ActivityRepository } from '../persistence/activity-repository';
import type { MessageRepository } from '../persistence/message-repository';
import type { SessionRecord } from '../persistence/session-repository';
import { RunAlreadyActiveError } from '../session-errors';
import type { SessionService } from '../session-service';
import type { StreamingWsRegistry } from '../ws/streaming-ws-registry';
import { createWsEvent } from '../ws/ws-event';
import { WsStreamingEventListener } from '../ws/ws-streaming-event-listener';
import type { SessionToolProvider } from './session-tool-provider';

export interface RunServiceDeps {
  agentLoop: AgentLoop;
  sessions: SessionService;
  messages: MessageRepository;
  activities: ActivityRepository;
  wsRegistry: StreamingWsRegistry;
  localSessions: LocalToolSessionRegistry;
  askUserQuestions: AskUserQuestionsRegistry;
  sessionTools: SessionToolProvider;
  modelConfig: LlmModelConfig;
  systemPrompt?: string | null;
}

interface ActiveRun {
  executionId: string;
  context: AgentExecutionContext | null;
  cancelled: boolean;
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
  private readonly logger = new Logger('RunService');
  private readonly active = new Map<number, ActiveRun>();

  constructor(private readonly deps: RunServiceDeps) {}

  /** Stores the user's message and starts the run; throws `RunAlreadyActiveError` if one is going. */
  start(session: SessionRecord, content: string): { executionId: string } {
    const running = this.active.get(session.id);
    if (running) throw new RunAlreadyActiveError(session.id, running.executionId);
    const executionId = randomUUID();
    this.deps.messages.append(session.id, executionId, { role: 'user', content });
    const run: ActiveRun = { executionId, context: null, cancelled: false, done: Promise.resolve() };
    this.active.set(session.id, run);
    run.done = ExecutionScope.run(executionId, () => this.execute(session, run))
      .catch((error: unknown) => this.logger.error(`run ${executionId} failed: ${describe(error)}`))
      .finally(() => {
        if (this.active.get(session.id) === run) this.active.delete(session.id);
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

  /** Cancels every run and waits for them to end (server shutdown). */
  async shutdown(): Promise<void> {
    const runs = [...this.active.keys()];
    for (const sessionId of runs) this.cancel(sessionId);
    await Promise.all([...this.active.values()].map((run) => run.done));
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
    });
    // The session's MCP servers stay up for the whole run, however long it pauses between calls.
    const releaseMcp = deps.sessionTools.hold(session);
    try {
      await this.runAgent(session, run, listener);
    } finally {
      releaseMcp();
    }
  }

  private async runAgent(session: SessionRecord, run: ActiveRun, listener: WsStreamingEventListener): Promise<void> {
    const { deps } = this;
    const sessionTools = await deps.sessionTools.forSession(session);
    for (const problem of sessionTools.problems) {
      this.logger.warn(`session ${session.id}: ${problem}`);
      deps.wsRegistry.sendToUser(session.userId, createWsEvent('error', session.id, { message: problem, executionId: run.executionId }));
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
    if (run.cancelled) context.cancel();
    const outcome = await deps.agentLoop.execute(context, listener, {
      saveAssistantMessage: (message) => {
        deps.messages.append(session.id, run.executionId, message);
      },
      saveToolMessages: (messages) => {
        deps.messages.appendMany(session.id, run.executionId, messages);
      },
    });
    this.logger.log(`run ${run.executionId} of session ${session.id}: ${outcome.status} after ${outcome.rounds} round(s)`);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
