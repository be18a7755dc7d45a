import { isChunkList, type ChatMessage, type ChatRequest, type ChatUsage, type StreamChunk, type StreamRead, type ToolCall, type ToolDefinition } from '../llm/chat-request';
import { readsOf, type LlmAdapter } from '../llm/llm-adapter';
import { LlmAnswerTooLargeError } from '../llm/llm-errors';
import type { Tool } from '../tool/tool';
import { ToolCallContext } from '../tool/tool-call-context';
import type { ToolConcurrency, ToolInvocation, ToolInvocationDispatcher } from '../tool/tool-invocation';
import type { ToolRegistry } from '../tool/tool-registry';
import { toToolResultMeta, type ToolResult } from '../tool/tool-result';
import type { AgentEventListener } from './agent-event-listener';
import { toolResultMessage, type AgentExecutionContext, type ToolMessageExtras } from './agent-execution-context';
import type { BackgroundTaskManager, BackgroundTaskResult } from '../runtime/background-task-manager';
import { ToolCallAccumulator } from './tool-call-accumulator';
import { RoundResults } from './round-results';
import { runInTurns } from './round-schedule';
import { answerEveryToolCall } from '../llm/tool-call-sequence';
import { errorMessage } from '../runtime/error-message';

/** Where a run's new messages are stored, as they happen. */
export interface AgentRunPersistence {
  /** Each model answer, with its tool calls. */
  saveAssistantMessage(message: ChatMessage): void | Promise<void>;
  /**
   * The messages the loop adds beside the model's answers, once per batch in conversation order:
   * the `role: 'tool'` results of a round (one call per round, in call order), and the `role: 'user'`
   * messages that carry finished background tasks into the conversation.
   */
  saveToolMessages(messages: ChatMessage[]): void | Promise<void>;
  /**
   * Optional: each tool result as soon as its call finishes (in the order calls finish), before
   * the round's batch reaches `saveToolMessages`. A store that keeps these need not lose the
   * results of a round that a crash cut short; it must then skip them in the batch.
   */
  saveToolResult?(message: ChatMessage): void | Promise<void>;
}

/** How a run ended. */
export interface AgentRunOutcome {
  status: 'completed' | 'cancelled' | 'interrupted' | 'error' | 'max_rounds';
  /** Model calls made (a call aborted mid-stream counts). */
  rounds: number;
  /** What went wrong, for `error`, `max_rounds` and `interrupted`. */
  error?: string;
  /** Token usage summed over the rounds that reported it. */
  usage?: ChatUsage;
}

export interface AgentLoopLogger {
  warn(message: string): void;
}

export interface AgentLoopDeps {
  llm: LlmAdapter;
  dispatcher: ToolInvocationDispatcher;
  registry: ToolRegistry;
  /** Source of finished background jobs, injected at the start of each round. */
  backgroundTasks?: BackgroundTaskManager | null;
  /** Receives listener failures; defaults to the console. */
  logger?: AgentLoopLogger;
}

/**
 * The round a run was waiting in when its process stopped: the calls of the conversation's last
 * assistant message, the results some of them already have, and which of those the run's
 * watchers were already shown.
 */
export interface PendingRound {
  calls: ToolCall[];
  /** Results that stand, by call id; every other call is dispatched. */
  settled: ReadonlyMap<string, ToolResult>;
  /** Calls whose `tool_call_result` was already sent (and recorded): not announced again. */
  announced: ReadonlySet<string>;
  /**
   * Calls that were waiting for a person (their answer is with the dispatcher). Every other call
   * without a result either never started — it runs now — or may have been running when the
   * process stopped: see `executeToolCalls`.
   */
  waited?: ReadonlySet<string>;
}

/** The content a call gets when the run is cancelled before the call finishes. */
export const TOOL_CANCELLED_RESULT = 'Tool execution cancelled: the run was cancelled before the tool finished';
/** What the model reads for a call the process did not live to finish. */
export const INTERRUPTED_TOOL_RESULT = 'Tool execution failed: the server stopped before the call finished';

const ABORTED = Symbol('aborted');

const consoleLogger: AgentLoopLogger = { warn: (message) => console.warn(message) };

/** A model round as the stream delivered it. */
type StreamedRound =
  | { kind: 'answer'; message: ChatMessage; toolCalls: ToolCall[]; usage: ChatUsage | null }
  | { kind: 'cancelled'; partialContent: string; usage: ChatUsage | null }
  | { kind: 'failed'; error: string; partialContent?: string };

/**
 * Runs an agent: a model round, then the round's tool calls (concurrently, each under its own
 * `ToolCallContext`), their results appended in call order, and again, until the model answers
 * without calling tools, the run is cancelled, or `maxRounds` is reached.
 */
export class AgentLoop {
  private readonly llm: LlmAdapter;
  private readonly dispatcher: ToolInvocationDispatcher;
  private readonly registry: ToolRegistry;
  private readonly backgroundTasks: BackgroundTaskManager | null;
  private readonly logger: AgentLoopLogger;

  constructor(deps: AgentLoopDeps) {
    this.llm = deps.llm;
    this.dispatcher = deps.dispatcher;
    this.registry = deps.registry;
    this.backgroundTasks = deps.backgroundTasks ?? null;
    this.logger = deps.logger ?? consoleLogger;
  }

  /**
   * Runs `context` to its end. Never rejects: a model failure, a store failure or too many rounds
   * is reported to `listener.onError` and in the outcome; a cancelled or completed run ends with
   * `listener.onMessageEnd`.
   */
  async execute(
    context: AgentExecutionContext,
    listener: AgentEventListener,
    persistence?: AgentRunPersistence,
  ): Promise<AgentRunOutcome> {
    return this.drive(context, listener, persistence, null);
  }

  /**
   * Goes on with a run whose process stopped while it waited in a round: `context.messages` is
   * the stored conversation, ending with the round's assistant message. The round's calls
   * without a result are dispatched (the dispatcher settles answered waits from what it was
   * given), the round is applied in call order as always, and the run continues to its end as
   * `execute` would have. A run already cancelled closes the round with the cancelled result for
   * those calls and ends.
   */
  async resume(
    context: AgentExecutionContext,
    listener: AgentEventListener,
    persistence: AgentRunPersistence | undefined,
    round: PendingRound,
  ): Promise<AgentRunOutcome> {
    return this.drive(context, listener, persistence, round);
  }

  private async drive(
    context: AgentExecutionContext,
    listener: AgentEventListener,
    persistence: AgentRunPersistence | undefined,
    pending: PendingRound | null,
  ): Promise<AgentRunOutcome> {
    const notify = this.notifierFor(listener);
    let usage: ChatUsage | null = null;
    let rounds = 0;

    const end = (status: 'completed' | 'cancelled'): AgentRunOutcome => {
      // A run stopped by the server rather than by its user has not ended normally.
      const interruption = status === 'cancelled' ? context.interruptedBecause : null;
      if (interruption !== null) return fail('interrupted', interruption);
      notify('onMessageEnd', (l) => l.onMessageEnd(usage));
      return withUsage({ status, rounds }, usage);
    };
    const fail = (status: 'error' | 'max_rounds' | 'interrupted', error: string): AgentRunOutcome => {
      notify('onError', (l) => l.onError(error));
      return withUsage({ status, rounds, error }, usage);
    };

    try {
      if (pending !== null) await this.executeToolCalls(context, pending.calls, notify, persistence, pending);
      while (rounds < context.maxRounds) {
        if (context.isCancelled) return end('cancelled');
        await this.injectBackgroundResults(context, persistence);

        rounds++;
        const streamed = await this.streamRound(context, notify, rounds);
        if (streamed.kind === 'failed') {
          if (streamed.partialContent) await this.keepPartialAnswer(context, streamed.partialContent, persistence);
          return fail('error', streamed.error);
        }
        usage = addUsage(usage, streamed.usage);
        if (streamed.kind === 'cancelled') {
          await this.keepPartialAnswer(context, streamed.partialContent, persistence);
          return end('cancelled');
        }

        const answer = streamed.message;
        context.addMessage(answer);
        await save(() => persistence?.saveAssistantMessage(answer));
        if (streamed.toolCalls.length === 0) return end('completed');

        await this.executeToolCalls(context, streamed.toolCalls, notify, persistence);
      }
      if (context.isCancelled) return end('cancelled');
      return fail('max_rounds', `The run stopped after the maximum of ${context.maxRounds} rounds`);
    } catch (error) {
      // Model and tool failures are values by now; what lands here is a store that failed or a
      // session tool whose definition cannot be read.
      return fail('error', errorMessage(error));
    }
  }

  /** What the user already saw of a cut-short answer stays in the conversation; unfinished tool calls do not. */
  private async keepPartialAnswer(context: AgentExecutionContext, content: string, persistence?: AgentRunPersistence): Promise<void> {
    if (content === '') return;
    const partial: ChatMessage = { role: 'assistant', content };
    context.addMessage(partial);
    await save(() => persistence?.saveAssistantMessage(partial));
  }

  /** The tools offered to the model: allowed registry tools, then allowed session tools. */
  private buildToolDefinitions(context: AgentExecutionContext): ToolDefinition[] {
    const offered: Tool[] = this.registry.list().filter((tool) => context.isToolAllowed(tool.getName()));
    const names = new Set(offered.map((tool) => tool.getName()));
    for (const tool of context.sessionTools) {
      const name = tool.getName();
      // The dispatcher looks in the registry first, so a same-named session tool is unreachable.
      if (names.has(name) || !context.isToolAllowed(name)) continue;
      names.add(name);
      offered.push(tool);
    }
    return offered.map((tool) => ({
      type: 'function',
      function: { name: tool.getName(), description: tool.getDescription(), parameters: tool.getInputSchema() },
    }));
  }

  /**
   * Runs the calls of a round as their tools allow (`runInTurns`): read-only calls together,
   * any other call after every call before it. Each runs inside `ToolCallContext.run(callId, …)`;
   * results are applied in the round's order: to the conversation, to the listener, then to the
   * store in one batch. On cancellation, calls still running or waiting get
   * `TOOL_CANCELLED_RESULT`, so each call of the stored assistant message still has its tool
   * message.
   */
  private async executeToolCalls(
    context: AgentExecutionContext,
    toolCalls: ToolCall[],
    notify: Notifier,
    persistence?: AgentRunPersistence,
    resumed?: PendingRound,
  ): Promise<void> {
    const startedAt = performance.now();
    const results = new RoundResults<ToolResult>(toolCalls.length, context.signal);
    const turns = this.planRound(context, toolCalls, persistence, resumed, results);
    runInTurns(
      turns,
      (position) => {
        const call = toolCalls[position];
        // Made when its turn comes, not for the whole round at once: what a call holds while it
        // waits is only its place in `turns`.
        const invocation = this.invocationFor(context, call, notify);
        const allowed = context.isToolAllowed(call.function.name);
        const dispatched = ToolCallContext.run(call.id, () => this.dispatchTool(call, invocation, allowed));
        return results.take(position, persistence?.saveToolResult ? this.storeOnFinish(context, call, dispatched, persistence) : dispatched);
      },
      () => context.isCancelled,
    ).catch((error: unknown) => results.failRemaining(error));
    const toolMessages: ChatMessage[] = [];
    try {
      for (const call of toolCalls) {
        const known = results.next();
        const settled = known instanceof Promise ? await known : known;
        const result = settled ?? cancelledResult(call.id, Math.round(performance.now() - startedAt));
        const meta = toToolResultMeta(result);
        toolMessages.push(context.addToolResult(call.id, call.function.name, result.content, result.status === 'error', messageExtras(result)));
        if (resumed?.announced.has(call.id)) continue;
        notify('onToolCallResult', (l) => l.onToolCallResult(call.id, result.content, meta));
      }
    } finally {
      results.close();
    }
    await save(() => persistence?.saveToolMessages(toolMessages));
  }

  /**
   * How each call of a round may overlap the others (`runInTurns`); null for a call that takes no
   * turn: a resumed call whose result stands, one that may have been running when the process
   * stopped (both get their result here), and every call of a run cancelled as the answer ended.
   */
  private planRound(
    context: AgentExecutionContext,
    toolCalls: ToolCall[],
    persistence: AgentRunPersistence | undefined,
    resumed: PendingRound | undefined,
    results: RoundResults<ToolResult>,
  ): Array<ToolConcurrency | null> {
    // Of a resumed round: whether every call so far had finished before the process stopped.
    let earlierFinished = true;
    return toolCalls.map((call, position) => {
      // A resumed round's results stand, cancelled or not; they were stored as their calls finished.
      const settled = resumed?.settled.get(call.id);
      const finishedBefore = earlierFinished;
      earlierFinished &&= settled !== undefined;
      if (settled !== undefined) {
        results.set(position, settled);
        return null;
      }
      if (context.isCancelled) return null;
      // A refused call runs nothing, so it takes no turn.
      const concurrency = context.isToolAllowed(call.function.name)
        ? (this.dispatcher.concurrencyOf?.(this.invocationFor(context, call, null)) ?? 'shared')
        : 'shared';
      if (resumed && !resumed.waited?.has(call.id) && concurrency === 'exclusive' && finishedBefore) {
        // Its turn had come before the stop and it left no result: it may have done part of its
        // work, so it is not run a second time. (A read-only call is safe to run again; a call
        // behind one that had not finished never started, and runs now.)
        const interrupted = Promise.resolve(interruptedResult(call.id));
        void results.take(position, persistence?.saveToolResult ? this.storeOnFinish(context, call, interrupted, persistence) : interrupted);
        return null;
      }
      return concurrency;
    });
  }

  /**
   * Hands a call's result to the store the moment the call finishes, so a process that dies
   * before the round ends does not take finished work with it. The round still applies results
   * in call order; a failure of this early write fails the round's batch write instead.
   */
  private async storeOnFinish(
    context: AgentExecutionContext,
    call: ToolCall,
    dispatched: Promise<ToolResult>,
    persistence: AgentRunPersistence,
  ): Promise<ToolResult> {
    const result = await dispatched;
    // A result that arrives after the run was cancelled is not the one the model will read.
    if (context.isCancelled) return result;
    try {
      const saved = persistence.saveToolResult?.(toolResultMessage(call.id, call.function.name, result.content, result.status === 'error', messageExtras(result)));
      // The server's store is synchronous: only a store that returns a promise is waited for.
      if (saved instanceof Promise) await saved;
    } catch (error) {
      this.logger.warn(`tool result of ${call.id} was not stored as it finished: ${errorMessage(error)}`);
    }
    return result;
  }

  /**
   * Runs one call through the dispatcher's contract entry and hands its promise on (an `async`
   * wrapper would add a step to every call). Never rejects: a tool outside the allowed set is
   * refused here with an error result, and the dispatcher turns a thrown error into one
   * (`Tool execution failed: …`, the content the model has always read).
   */
  private dispatchTool(call: ToolCall, invocation: ToolInvocation, allowed: boolean): Promise<ToolResult> {
    if (!allowed) {
      const message = `tool '${call.function.name}' is not in the allowed tool set`;
      // Refused before it ran: it took no time.
      return Promise.resolve({ callId: call.id, status: 'error', content: `Tool execution failed: ${message}`, errorMessage: message, durationMs: 0 });
    }
    try {
      return this.dispatcher.dispatchInvocation(invocation);
    } catch (error) {
      // A dispatcher that throws instead of rejecting fails its call the same way.
      return Promise.reject(error);
    }
  }

  /** The call with its whole context, as the dispatcher takes it; `notify` null: no progress sink (to ask about it only). */
  private invocationFor(context: AgentExecutionContext, call: ToolCall, notify: Notifier | null): ToolInvocation {
    return {
      callId: call.id,
      executionId: context.executionId,
      toolName: call.function.name,
      argumentsJson: call.function.arguments,
      executionMode: context.executionMode,
      sessionId: context.sessionId,
      userId: context.userId,
      executionUserId: context.executionUserId,
      workspace: context.workspace,
      permissionLevel: context.permissionLevel,
      modelConfig: context.modelConfig,
      sessionTools: context.sessionTools,
      // The run's cancellation reaches the tool itself, not only the loop's waiting.
      signal: context.signal,
      onProgress: notify === null ? undefined : (progress) => notify('onToolCallProgress', (l) => l.onToolCallProgress?.(call.id, progress)),
    };
  }

  private async injectBackgroundResults(context: AgentExecutionContext, persistence?: AgentRunPersistence): Promise<void> {
    if (!this.backgroundTasks || context.sessionId === null) return;
    const finished = this.backgroundTasks.drainCompleted(context.sessionId);
    if (finished.length === 0) return;
    const messages = finished.map(backgroundResultMessage);
    for (const message of messages) context.addMessage(message);
    await save(() => persistence?.saveToolMessages(messages));
  }

  private async streamRound(context: AgentExecutionContext, notify: Notifier, round: number): Promise<StreamedRound> {
    const request: ChatRequest = {
      messages: answerEveryToolCall(context.messages),
      sessionId: context.sessionId,
    };
    const tools = this.buildToolDefinitions(context);
    if (tools.length > 0) request.tools = tools;

    let content = '';
    let thinking = '';
    let thinkingOpen = false;
    let usage: ChatUsage | null = null;
    const closeThinking = (): void => {
      if (!thinkingOpen) return;
      thinkingOpen = false;
      notify('onThinkingEnd', (l) => l.onThinkingEnd?.());
    };
    const accumulator = new ToolCallAccumulator({
      onStart: (id, name, args) => notify('onToolCallStart', (l) => l.onToolCallStart(id, name, args)),
      onArgumentsDelta: (id, fragment) => notify('onToolCallArgsDelta', (l) => l.onToolCallArgsDelta?.(id, fragment)),
    });

    const handle = (chunk: StreamChunk): void => {
      if (chunk.thinkingDelta) {
        if (!thinkingOpen) {
          thinkingOpen = true;
          notify('onThinkingStart', (l) => l.onThinkingStart?.());
        }
        thinking += chunk.thinkingDelta;
        const delta = chunk.thinkingDelta;
        notify('onThinkingDelta', (l) => l.onThinkingDelta?.(delta));
      }
      if (chunk.contentDelta) {
        closeThinking();
        content += chunk.contentDelta;
        const delta = chunk.contentDelta;
        notify('onContentDelta', (l) => l.onContentDelta(delta));
      }
      if (chunk.toolCallDeltas && chunk.toolCallDeltas.length > 0) {
        closeThinking();
        for (const delta of chunk.toolCallDeltas) accumulator.add(delta);
      }
      if (chunk.usage) usage = chunk.usage;
    };

    const signal = context.signal;
    let iterator: AsyncIterator<StreamRead> | undefined;
    const race = new AbortRace(signal);
    const cancelled = (open: AsyncIterator<StreamRead>): StreamedRound => {
      // An adapter that ignores the signal must not hold the run; its late end is dropped.
      open.return?.()?.catch(() => undefined);
      closeThinking();
      return { kind: 'cancelled', partialContent: content, usage };
    };
    try {
      // A read at a time where the adapter can (`streamReads`): one step of the iterator for all
      // the chunks that arrived together, each handled as a step of its own would be.
      iterator = readsOf(this.llm, request, context.modelConfig, signal)[Symbol.asyncIterator]();
      for (;;) {
        const next = await race.next(iterator.next());
        if (next === ABORTED) return cancelled(iterator);
        if (next.done) break;
        if (!isChunkList(next.value)) {
          handle(next.value);
          continue;
        }
        for (const chunk of next.value) {
          // A listener may cancel the run as a chunk is handled: the read's later chunks are not.
          if (signal.aborted) return cancelled(iterator);
          handle(chunk);
        }
      }
    } catch (error) {
      closeThinking();
      if (signal.aborted) return { kind: 'cancelled', partialContent: content, usage };
      // An answer stopped for its size was received in full up to the limit: it is kept. Any other
      // failure may have cut the answer anywhere: nothing of it is stored.
      if (error instanceof LlmAnswerTooLargeError) return { kind: 'failed', error: errorMessage(error), partialContent: content };
      return { kind: 'failed', error: errorMessage(error) };
    } finally {
      race.close();
    }
    closeThinking();

    const toolCalls = accumulator.finish((position) => `call_${context.executionId}_${round}_${position}`);
    const message: ChatMessage = {
      role: 'assistant',
      content: content !== '' ? content : toolCalls.length > 0 ? null : '',
    };
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    if (thinking !== '') message.reasoning_content = thinking;
    return { kind: 'answer', message, toolCalls, usage };
  }

  private notifierFor(listener: AgentEventListener): Notifier {
    return (event, call) => {
      try {
        const returned: unknown = call(listener);
        // A listener written as async would otherwise turn its failure into an unhandled rejection.
        if (returned instanceof Promise) {
          returned.catch((error: unknown) => this.logListenerFailure(event, error));
        }
      } catch (error) {
        this.logListenerFailure(event, error);
      }
    };
  }

  private logListenerFailure(event: string, error: unknown): void {
    try {
      this.logger.warn(`Agent event listener failed in ${event}: ${errorMessage(error)}`);
    } catch {
      // A logger that throws has nowhere left to report to.
    }
  }
}

/** Calls one listener method; failures are logged and swallowed. */
type Notifier = (event: keyof AgentEventListener, call: (listener: AgentEventListener) => unknown) => void;

/** How a finished background job reaches the model: as a user message at the next round. */
function backgroundResultMessage(task: BackgroundTaskResult): ChatMessage {
  return { role: 'user', content: `Background task ${task.taskId} (${task.description}) finished: ${task.result}` };
}

/** The images and attachments of a result, as its tool message carries them. */
function messageExtras(result: ToolResult): ToolMessageExtras {
  return {
    images: result.images?.map(({ mediaType, data }) => ({ mediaType, data })),
    attachments: result.attachments,
  };
}

/** The result of a resumed round's call that may have been running when its process stopped. */
function interruptedResult(callId: string): ToolResult {
  return { callId, status: 'error', content: INTERRUPTED_TOOL_RESULT, errorMessage: 'the server stopped before the call finished', durationMs: 0 };
}

/** The result of a call the run stopped waiting for, `durationMs` after the round's calls started. */
function cancelledResult(callId: string, durationMs: number): ToolResult {
  return { callId, status: 'error', content: TOOL_CANCELLED_RESULT, errorMessage: 'the run was cancelled before the tool finished', durationMs };
}

/**
 * Races each step of a stream against the run's signal: `next(step)` settles with the step, or
 * with `ABORTED` as soon as the signal fires; a later rejection of the step is ignored. One
 * listener on the signal serves the whole stream (adding and removing one on an `AbortSignal` for
 * every chunk cost twice what the rest of a chunk's way through the loop did). One step at a time.
 */
class AbortRace {
  private settle: ((aborted: typeof ABORTED) => void) | null = null;
  private readonly onAbort = (): void => this.settle?.(ABORTED);

  constructor(private readonly signal: AbortSignal) {
    if (!signal.aborted) signal.addEventListener('abort', this.onAbort, { once: true });
  }

  next<T>(step: Promise<T>): Promise<T | typeof ABORTED> {
    if (this.signal.aborted) {
      step.catch(() => undefined);
      return Promise.resolve(ABORTED);
    }
    return new Promise<T | typeof ABORTED>((resolve, reject) => {
      this.settle = resolve;
      // Also handles a rejection that comes after the abort: it settles nothing then.
      step.then(resolve, reject);
    });
  }

  close(): void {
    this.settle = null;
    this.signal.removeEventListener('abort', this.onAbort);
  }
}

/** Runs a store call; its failure ends the run, named as a store failure. */
async function save(write: () => void | Promise<void> | undefined): Promise<void> {
  try {
    await write();
  } catch (error) {
    throw new Error(`Could not save the conversation: ${errorMessage(error)}`);
  }
}

function addUsage(total: ChatUsage | null, round: ChatUsage | null): ChatUsage | null {
  if (round === null) return total;
  if (total === null) return { ...round };
  return {
    promptTokens: total.promptTokens + round.promptTokens,
    completionTokens: total.completionTokens + round.completionTokens,
    totalTokens: total.totalTokens + round.totalTokens,
  };
}

function withUsage(outcome: AgentRunOutcome, usage: ChatUsage | null): AgentRunOutcome {
  return usage === null ? outcome : { ...outcome, usage };
}
