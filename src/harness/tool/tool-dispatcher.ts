import type { BackgroundTaskManager } from '../runtime/background-task-manager';
import type { LlmModelConfig } from '../llm/chat-request';
import type { LocalToolExecutor } from '../local/local-tool-executor';
import type { LocalToolSessionRegistry } from '../local/local-tool-session-registry';
import type { AskUserQuestionsRegistry } from './ask-user-questions-registry';
import type { DangerAssessor } from './danger-assessor';
import { validateAskUserQuestionsArguments } from './ask-user-questions-arguments';
import { ApprovalPolicy, readShellCommand, type ApprovalQuestion, type SettledApproval } from './approval-policy';
import type { ApprovalAnswer, ApprovalRequests } from './approval-requests';
import { callTool, type Tool, type ToolReturn } from './tool';
import type { AttachmentStore } from './attachment-store';
import { errorOutput, isToolOutput } from './tool-output';
import { budgetResult, resultFromOutput, withinBudget, type ResultStorage, type ToolOutputBudget } from './tool-output-result';
import { saveFullOutput } from './full-output-file';
import type { ToolDescriptor } from './tool-descriptor';
import {
  ASK_USER_QUESTIONS_TOOL,
  concurrencyOf,
  declaredDescriptor,
  DESKTOP_BUILTIN_TOOLS,
  SHELL_TOOL,
  toolFacts,
  type ToolFacts,
} from './tool-capabilities';
import { CallDeadlines, openCallSignal, type CallSignal } from './call-signal';
import { ToolCallContext, type ToolCallScope } from './tool-call-context';
import { UnknownToolError } from './tool-errors';
import type { ToolConcurrency, ToolInvocation, ToolInvocationDispatcher } from './tool-invocation';
import { parseToolArguments } from './tool-arguments';
import type { ToolRegistry } from './tool-registry';
import { executorFor } from './tool-routing';
import { normalizeToolResult, type ToolResult } from './tool-result';
import { errorMessage } from '../runtime/error-message';
import type { WaitStore } from '../runtime/wait-store';
import type { ResumedAnswer, ResumedAnswers } from './resumed-answers';

export { ASK_USER_QUESTIONS_TOOL, DESKTOP_BUILTIN_TOOLS, SERVER_ONLY_TOOLS, SHELL_TOOL, WRITE_TOOLS } from './tool-capabilities';
export { MCP_TOOL_PREFIX } from './mcp-tool-name';

/** Whether a call needs the user's approval before it runs, and why (the legacy shape). */
export interface ApprovalDecision {
  required: boolean;
  reason: string | null;
}

/** Reads a session's permission level as it is now (it may change mid-run). */
export interface PermissionLevelLookup {
  getPermissionLevel(sessionId: number): string | null | undefined;
}

export interface ToolDispatcherDeps {
  registry: ToolRegistry;
  localExecutor?: LocalToolExecutor | null;
  localSessions?: LocalToolSessionRegistry | null;
  askUserQuestions?: AskUserQuestionsRegistry | null;
  dangerAssessor?: DangerAssessor | null;
  permissionLookup?: PermissionLevelLookup | null;
  backgroundTasks?: BackgroundTaskManager | null;
  /** Where calls that run on the server wait for their owner's approval; without it they cannot ask. */
  approvals?: ApprovalRequests | null;
  /** How long `ask_user_questions` waits for an answer (default 10 minutes). */
  askTimeoutMs?: number;
  /** Where questions asked in a run are kept while they wait, so that they outlive the process. */
  waits?: WaitStore | null;
  /** Answers to waits that outlived their process, which settle their calls when a run resumes. */
  resumedAnswers?: ResumedAnswers | null;
  /**
   * The longest any call may take before its signal fires and it is answered with an error
   * (`HARNESS_TOOL_TIMEOUT_MS`); null or absent: no dispatcher-wide deadline, each executor
   * keeps its own limits.
   */
  callTimeoutMs?: number | null;
  /** Where binary parts and full texts of results are kept; without it they are described, not kept. */
  attachments?: AttachmentStore | null;
  /** How much of a result the model reads; null or absent: all of it (the legacy behaviour). */
  outputBudget?: ToolOutputBudget | null;
  /** Milliseconds from any origin, for `durationMs` (default `performance.now`). */
  now?: () => number;
}

const NO_QUESTION_CLIENT = JSON.stringify({ error: 'No connected client to receive questions' });

/**
 * Which way a call goes: `session`, the full path (approvals, LOCAL routing, special tools), or
 * `registry`, the legacy light forms of `dispatch` that run a registry tool with no session.
 */
type DispatchPath = 'session' | 'registry';

/** A call's result, and what it threw when it threw (the legacy entry throws it again). */
interface Settled {
  result: ToolResult;
  failure?: { error: unknown };
}

/** A call with everything known about its tool, settled once. */
interface ResolvedCall {
  invocation: ToolInvocation;
  /** The instance the name resolves to here (registry first, then the session's tools). */
  tool: Tool | undefined;
  /** Its descriptor, when it has one. */
  descriptor: ToolDescriptor | undefined;
  facts: ToolFacts;
}

/**
 * The single policy centre for tool calls: where a call runs (server, desktop, MCP server),
 * whether it runs, waits for approval or is refused (`approval-policy.ts`), and the special
 * cases (`ask_user_questions`, server-only tools, background shell on the desktop). Every entry
 * builds a `ToolInvocation` and every path below takes it whole.
 */
export class ToolDispatcher implements ToolInvocationDispatcher {
  private readonly registry: ToolRegistry;
  private readonly localExecutor: LocalToolExecutor | null;
  private readonly localSessions: LocalToolSessionRegistry | null;
  private readonly askUserQuestions: AskUserQuestionsRegistry | null;
  private readonly policy: ApprovalPolicy;
  private readonly permissionLookup: PermissionLevelLookup | null;
  private readonly backgroundTasks: BackgroundTaskManager | null;
  private readonly approvals: ApprovalRequests | null;
  private readonly askTimeoutMs: number;
  private readonly waits: WaitStore | null;
  private readonly resumedAnswers: ResumedAnswers | null;
  private readonly callTimeoutMs: number | null;
  /** The calls' deadlines, one timer for all of them; null without `callTimeoutMs`. */
  private readonly deadlines: CallDeadlines | null;
  private readonly attachments: AttachmentStore | null;
  private readonly outputBudget: ToolOutputBudget | null;
  /** A clock for `durationMs`; injectable for tests. */
  private readonly now: () => number;

  constructor(deps: ToolDispatcherDeps) {
    this.registry = deps.registry;
    this.localExecutor = deps.localExecutor ?? null;
    this.localSessions = deps.localSessions ?? null;
    this.askUserQuestions = deps.askUserQuestions ?? null;
    this.policy = new ApprovalPolicy(deps.dangerAssessor ?? null);
    this.permissionLookup = deps.permissionLookup ?? null;
    this.backgroundTasks = deps.backgroundTasks ?? null;
    this.approvals = deps.approvals ?? null;
    this.askTimeoutMs = deps.askTimeoutMs ?? 10 * 60_000;
    this.waits = deps.waits ?? null;
    this.resumedAnswers = deps.resumedAnswers ?? null;
    this.callTimeoutMs = deps.callTimeoutMs ?? null;
    this.deadlines = this.callTimeoutMs === null ? null : new CallDeadlines(this.callTimeoutMs);
    this.attachments = deps.attachments ?? null;
    this.outputBudget = deps.outputBudget ?? null;
    this.now = deps.now ?? (() => performance.now());
  }

  /**
   * The entry for every tool call: resolves the tool and its descriptor, dispatches the call and
   * normalizes what the tool returned. Never throws: an exception becomes an `error` result whose
   * content is what the agent loop used to make of it, `Tool execution failed: …`.
   */
  dispatchInvocation(invocation: ToolInvocation): Promise<ToolResult> {
    return this.settle(invocation, 'session').then(resultOf);
  }

  /** How the call may overlap the other calls of its round: read-only calls share, others wait. */
  concurrencyOf(invocation: ToolInvocation): ToolConcurrency {
    return concurrencyOf(this.resolve(invocation).facts);
  }

  /**
   * Legacy entry with ten positional parameters whose meaning depends on how many are given:
   *
   * | n   | meaning |
   * |-----|---------|
   * | ≤2  | `(name, args)` — cloud, no workspace |
   * | 3   | `(name, args, workspace)` — cloud |
   * | 5   | `(name, args, mode, sessionId, workspace)` |
   * | 7   | `(name, args, mode, sessionId, workspace, permissionLevel, modelConfig)` |
   * | 8   | `(name, args, mode, sessionId, userId, workspace, permissionLevel, modelConfig)` |
   * | 9   | `…, sessionTools)` |
   * | 10  | `…, sessionTools, executionUserId)` |
   *
   * 4 and 6 are read as the widest form. Rejects with `UnknownToolError` for a tool it cannot find
   * in CLOUD mode, and with whatever a tool threw.
   *
   * Compatibility entry: it builds a `ToolInvocation` and takes the path of `dispatchInvocation`
   * (the light forms, ≤3 parameters, the registry-only path). Production code calls
   * `dispatchInvocation`.
   */
  dispatch(
    toolName: string,
    argumentsJson: string,
    a?: unknown,
    b?: unknown,
    c?: unknown,
    d?: unknown,
    e?: unknown,
    f?: unknown,
    g?: unknown,
    h?: unknown,
  ): Promise<string> {
    const invocation = legacyInvocation(arguments.length, toolName, argumentsJson, [a, b, c, d, e, f, g, h]);
    return this.settle(invocation, arguments.length <= 3 ? 'registry' : 'session').then(({ result, failure }) => {
      if (failure) throw failure.error;
      return result.content;
    });
  }

  /** Legacy: the light cloud path — the registry only, no session. */
  async dispatchCloud(toolName: string, argumentsJson: string, workspace: string | null): Promise<ToolReturn> {
    return this.runRegistryTool({ ...legacyInvocation(2, toolName, argumentsJson, []), workspace });
  }

  /** Legacy: the full path with positional parameters; `descriptor` replaces the tool's own. */
  async dispatchFull(
    toolName: string,
    argumentsJson: string,
    executionMode: string | null,
    sessionId: number | null,
    userId: number | null,
    workspace: string | null,
    permissionLevel: string | null,
    modelConfig: LlmModelConfig | null,
    sessionTools: Tool[] | null,
    executionUserId: number | null,
    descriptor?: ToolDescriptor,
  ): Promise<ToolReturn> {
    const invocation: ToolInvocation = {
      callId: '',
      toolName,
      argumentsJson,
      executionMode,
      sessionId,
      userId,
      executionUserId,
      workspace,
      permissionLevel,
      modelConfig,
      sessionTools,
    };
    const call = this.resolve(invocation);
    return this.route(descriptor === undefined ? call : { ...call, descriptor, facts: toolFacts(descriptor, toolName) });
  }

  /**
   * Legacy: whether a call that the desktop runs needs the user's approval at a level (the LOCAL
   * rows of the policy). An unknown or missing level is READ_ONLY.
   */
  async shouldRequireApproval(
    descriptor: ToolDescriptor,
    toolName: string,
    level: string | null,
    argumentsJson: string,
    modelConfig: LlmModelConfig | null,
  ): Promise<ApprovalDecision> {
    const question: ApprovalQuestion = { toolName, executionMode: 'LOCAL', permissionLevel: level, facts: toolFacts(descriptor, toolName), known: true };
    const verdict = await this.policy.decide(question, argumentsJson, modelConfig);
    return verdict.action === 'run' ? { required: false, reason: null } : { required: true, reason: verdict.reason };
  }

  /**
   * Runs the call with its signal and deadline when it has them: a call that can be cancelled or
   * watched runs in its `ToolCallContext` scope, so the tool reads its signal and reports
   * progress; one that cannot (the legacy entry) takes the path it always took.
   */
  private async settle(invocation: ToolInvocation, path: DispatchPath): Promise<Settled> {
    if (invocation.signal === undefined && invocation.onProgress === undefined && this.callTimeoutMs === null) {
      return this.execute(invocation, path);
    }
    const call = openCallSignal(invocation.signal, this.deadlines);
    const scope = new CallScope(invocation.callId, call, invocation.onProgress);
    const started = this.now();
    // A call whose run was cancelled before it started runs nothing.
    const execution = call?.aborted ? null : ToolCallContext.runScope(scope, () => this.execute(invocation, path));
    // A call that finished as it was made (a synchronous tool) has nothing left to race.
    if (execution !== null && !isPromiseLike(execution) && !call?.aborted) {
      call?.close();
      return execution;
    }
    let stopped: unknown;
    try {
      stopped = execution === null ? call?.reason : await untilAborted(Promise.resolve(execution), call);
    } finally {
      call?.close();
    }
    if (execution !== null && stopped === null) return execution;
    // The tool is told (its signal fired) but not waited for: a tool that ignores its signal
    // must not hold the run.
    const message =
      // A deadline's reason is a DOMException named TimeoutError, as AbortSignal.timeout's is.
      (stopped as { name?: unknown } | undefined)?.name === 'TimeoutError'
        ? `the tool did not finish within ${this.callTimeoutMs} ms`
        : 'the run was cancelled before the tool finished';
    return {
      result: { callId: invocation.callId, status: 'error', content: `Tool execution failed: ${message}`, errorMessage: message, durationMs: elapsed(started, this.now()) },
    };
  }

  /**
   * Runs the call and settles what it returned, or threw, as its result. Synchronous when the
   * tool is (and its result needs no storing): a promise and a turn of the microtask queue for
   * each of the dispatcher's steps was much of what a quick call cost.
   */
  private execute(invocation: ToolInvocation, path: DispatchPath): Settled | Promise<Settled> {
    const started = this.now();
    let raw: ToolReturn | Promise<ToolReturn>;
    try {
      raw = path === 'registry' ? this.runRegistryTool(invocation) : this.route(this.resolve(invocation));
    } catch (error) {
      return this.failed(invocation, error, started);
    }
    if (!isPromiseLike(raw)) return this.finish(invocation, raw, started);
    return Promise.resolve(raw).then(
      (value) => this.finish(invocation, value, started),
      (error: unknown) => this.failed(invocation, error, started),
    );
  }

  /** What the tool returned, as the call's result; a failure to make it one fails the call. */
  private finish(invocation: ToolInvocation, raw: ToolReturn, started: number): Settled | Promise<Settled> {
    try {
      const result = this.toResult(invocation, raw, elapsed(started, this.now()));
      if (!isPromiseLike(result)) return { result };
      return result.then(
        (stored) => ({ result: stored }),
        (error: unknown) => this.failed(invocation, error, started),
      );
    } catch (error) {
      return this.failed(invocation, error, started);
    }
  }

  /** A call that threw: an error result with what it threw (the legacy entry throws it again). */
  private failed(invocation: ToolInvocation, error: unknown, started: number): Settled {
    const message = errorMessage(error);
    return {
      result: { callId: invocation.callId, status: 'error', content: 'Tool execution failed: ' + message, errorMessage: message, durationMs: elapsed(started, this.now()) },
      failure: { error },
    };
  }

  /**
   * A tool's answer as a result: a `ToolOutput`'s parts and status are facts; a bare string
   * (legacy tools, desktop answers) goes through `normalizeToolResult`'s text rule. Either way the
   * text the model reads is then held to the output budget, when one is set. Synchronous unless
   * the budget has to store the whole text.
   */
  private toResult(invocation: ToolInvocation, raw: unknown, durationMs: number): ToolResult | Promise<ToolResult> {
    const output = isToolOutput(raw);
    // Where parts and whole texts go: only a `ToolOutput`, or a result over its budget, needs it.
    const storage = (): ResultStorage => ({
      store: this.attachments,
      sessionId: invocation.sessionId,
      executionId: invocation.executionId ?? null,
      toolCallId: invocation.callId,
      toolName: invocation.toolName,
      saveFullText: invocation.executionMode === 'LOCAL' || !invocation.workspace ? undefined : (text) => saveFullOutput(invocation.workspace!, invocation.callId, text),
    });
    const result = output
      ? resultFromOutput(raw, storage(), this.outputBudget ?? UNLIMITED_OUTPUT, durationMs)
      : normalizeToolResult(invocation.callId, toContent(raw), durationMs);
    return this.outputBudget && !withinBudget(result, this.outputBudget) ? budgetResult(result, storage(), this.outputBudget) : result;
  }

  /**
   * The tool a name resolves to — the registry first, then the session's tools, looked up in
   * that order by every path — with its descriptor and the facts the policy reads.
   */
  private resolve(invocation: ToolInvocation): ResolvedCall {
    const tool = this.registry.get(invocation.toolName) ?? findSessionTool(invocation.sessionTools, invocation.toolName);
    const descriptor = declaredDescriptor(tool);
    return { invocation, tool, descriptor, facts: toolFacts(descriptor, invocation.toolName) };
  }

  /**
   * The full path: `ask_user_questions`, then wherever `executorFor` says the call runs. May
   * throw (an unknown tool, a tool that throws as it is called) instead of rejecting.
   */
  private route(call: ResolvedCall): ToolReturn | Promise<ToolReturn> {
    const { invocation } = call;
    const resumed = this.resumedAnswers?.take(invocation.executionId, invocation.callId);
    if (resumed !== undefined) return this.settleResumed(call, resumed);
    if (invocation.toolName === ASK_USER_QUESTIONS_TOOL) return this.askUser(invocation);
    const executor = executorFor(call.descriptor, invocation.toolName, invocation.executionMode);
    if (invocation.executionMode === 'LOCAL' && executor === 'desktop') return this.runOnDesktop(call);
    return this.runHere(call);
  }

  /**
   * A call this server runs (itself or through an MCP server), under the policy: it runs, waits
   * for the owner's approval (`approval_request`), or is refused with an error result.
   */
  private runHere(call: ResolvedCall): ToolReturn | Promise<ToolReturn> {
    const { invocation, tool } = call;
    if (!tool) throw new UnknownToolError(invocation.toolName);
    const question = this.question(call, true);
    const verdict = this.policy.settled(question);
    // The common case, a call the policy lets run without an assessment: no wait on the way.
    if (verdict?.action === 'run') return this.callHere(tool, invocation);
    return this.runHereWhenDecided(tool, invocation, question, verdict);
  }

  /** `runHere` for a call the policy refuses, asks about, or must assess first. */
  private async runHereWhenDecided(tool: Tool, invocation: ToolInvocation, question: ApprovalQuestion, settled: SettledApproval | undefined): Promise<ToolReturn> {
    const verdict = settled ?? (await this.policy.decide(question, invocation.argumentsJson, invocation.modelConfig));
    if (verdict.action === 'refuse') return errorOutput(verdict.reason);
    if (verdict.action === 'ask') {
      const refused = await this.askApproval(invocation, verdict.reason);
      if (refused !== null) return refused;
    }
    return this.callHere(tool, invocation);
  }

  /** Calls a tool this server runs, with the session, user and workspace of the call. */
  private callHere(tool: Tool, invocation: ToolInvocation): ToolReturn | Promise<ToolReturn> {
    return callTool(tool, invocation.argumentsJson, invocation.sessionId, invocation.executionUserId ?? invocation.userId, invocation.workspace);
  }

  /**
   * A call whose wait outlived its process, settled by the answer it got: what the call would
   * have returned had the process lived — an approved call runs without being asked about again.
   */
  private async settleResumed(call: ResolvedCall, answer: ResumedAnswer): Promise<ToolReturn> {
    const { invocation, tool } = call;
    switch (answer.kind) {
      case 'approval':
        if (answer.outcome !== 'approved') return errorOutput(refusalMessage(invocation.toolName, answer.reason, answer));
        if (!tool) throw new UnknownToolError(invocation.toolName);
        return this.callHere(tool, invocation);
      case 'question':
        return 'answers' in answer ? JSON.stringify({ answers: answer.answers }) : JSON.stringify({ error: `The questions were not answered: ${answer.error}` });
      case 'local_tool':
        return answer.result;
    }
  }

  /** The legacy light forms: a registry tool, with at most a workspace. */
  private runRegistryTool(invocation: ToolInvocation): ToolReturn | Promise<ToolReturn> {
    const tool = this.registry.get(invocation.toolName);
    if (!tool) throw new UnknownToolError(invocation.toolName);
    return callTool(tool, invocation.argumentsJson, undefined, undefined, invocation.workspace ?? undefined);
  }

  /**
   * Offers the call to its owner and waits; `null` when approved, else the error result the model
   * reads (denied, no answer in time, nobody to ask, the run cancelled).
   */
  private async askApproval(invocation: ToolInvocation, reason: string): Promise<ToolReturn | null> {
    const { toolName, sessionId, userId } = invocation;
    if (!this.approvals || sessionId === null || userId === null) {
      return errorOutput(`'${toolName}' needs approval (${reason}), and this server has no way to ask for it; the call did not run`);
    }
    const answer = await this.approvals.request(
      { sessionId, ownerUserId: userId, toolCallId: invocation.callId, toolName, argumentsJson: invocation.argumentsJson, reason, executionId: invocation.executionId },
      ToolCallContext.signal() ?? invocation.signal,
    );
    return answer.outcome === 'approved' ? null : errorOutput(refusalMessage(toolName, reason, answer));
  }

  /**
   * A call the desktop runs (LOCAL), sent with the approval its level asks for: the desktop asks
   * the person. An async shell command runs there as a background task.
   */
  private async runOnDesktop(call: ResolvedCall): Promise<ToolReturn> {
    const { invocation } = call;
    const { toolName, argumentsJson, sessionId, workspace } = invocation;
    if (!this.localExecutor) return JSON.stringify({ error: 'LOCAL execution is not available on this server' });
    if (sessionId == null) return JSON.stringify({ error: `LOCAL tool '${toolName}' needs a session` });
    const verdict = await this.policy.decide(this.question(call, call.tool !== undefined || DESKTOP_BUILTIN_TOOLS.has(toolName)), argumentsJson, invocation.modelConfig);
    if (verdict.action === 'refuse') return errorOutput(verdict.reason);
    const needApproval = verdict.action === 'ask';
    const reason = verdict.action === 'ask' ? verdict.reason : null;
    const owner = invocation.userId;
    // Kept while it waits when it is a call of a run (a background command is not: nothing waits for it).
    const kept = invocation.executionId && owner !== null && !isAsyncShell(argumentsJson) ? { executionId: invocation.executionId, toolCallId: invocation.callId, ownerUserId: owner } : undefined;
    const work = (): Promise<string> => this.localExecutor!.execute(sessionId, toolName, argumentsJson, workspace, needApproval, reason, kept);
    if (toolName === SHELL_TOOL && this.backgroundTasks && isAsyncShell(argumentsJson)) {
      const taskId = this.backgroundTasks.start(sessionId, `shell: ${readShellCommand(argumentsJson) ?? ''}`, work());
      return JSON.stringify({
        status: 'started',
        task_id: taskId,
        message: 'The command runs on the desktop in the background; its result arrives with the next round.',
      });
    }
    return work();
  }

  /** The policy's question for a call, at the session's level as it is now. */
  private question(call: ResolvedCall, known: boolean): ApprovalQuestion {
    const { invocation } = call;
    // The user may change the level mid-run; the stored level wins over the one the run started with.
    const stored = invocation.sessionId === null ? null : this.permissionLookup?.getPermissionLevel(invocation.sessionId);
    return {
      toolName: invocation.toolName,
      executionMode: invocation.executionMode,
      permissionLevel: stored ?? invocation.permissionLevel,
      facts: call.facts,
      known,
    };
  }

  private async askUser(invocation: ToolInvocation): Promise<string> {
    const { sessionId, argumentsJson } = invocation;
    const parsed = validateAskUserQuestionsArguments(argumentsJson);
    if (!parsed.ok) return JSON.stringify({ error: parsed.error });
    const sessions = this.localSessions;
    const registry = this.askUserQuestions;
    if (sessionId == null || !sessions || !registry || !sessions.hasConnection(sessionId)) {
      return NO_QUESTION_CLIENT;
    }
    const requestId = registry.register(sessionId);
    const answer = registry.wait(requestId, this.askTimeoutMs);
    const data: Record<string, unknown> = { requestId, questions: parsed.questions };
    if (parsed.metadata !== undefined) data.metadata = parsed.metadata;
    const kept = invocation.executionId != null && invocation.userId !== null;
    if (kept) {
      const createdAt = Date.now();
      this.waits?.save({
        requestId,
        kind: 'question',
        sessionId,
        executionId: invocation.executionId!,
        toolCallId: invocation.callId,
        toolName: invocation.toolName,
        argumentsJson,
        ownerUserId: invocation.userId!,
        eventType: 'ask_user_questions',
        eventData: data,
        createdAt,
        expiresAt: createdAt + this.askTimeoutMs,
      });
    }
    // Every client that showed the questions closing means nobody can answer them: stop waiting.
    const delivery = sessions.sendWatched(sessionId, 'ask_user_questions', data, () => {
      registry.cancel(requestId, 'the client disconnected before answering');
    });
    if (delivery.delivered === 0) {
      registry.cancel(requestId, 'no client received the questions');
      if (kept) this.waits?.remove(requestId);
      await answer.catch(() => undefined);
      return NO_QUESTION_CLIENT;
    }
    try {
      return JSON.stringify({ answers: await answer });
    } catch (error) {
      sessions.sendToSession(sessionId, 'ask_user_questions_cancelled', { requestId });
      const message = errorMessage(error);
      return JSON.stringify({ error: `The questions were not answered: ${message}` });
    } finally {
      if (kept) this.waits?.remove(requestId);
      delivery.release();
    }
  }
}

/** What the model reads when an asked call does not run. */
function refusalMessage(toolName: string, reason: string, answer: Pick<ApprovalAnswer, 'outcome' | 'message'>): string {
  const said = answer.message ? `: ${answer.message}` : '';
  switch (answer.outcome) {
    case 'denied':
      return `The user denied the call to '${toolName}'${said}`;
    case 'expired':
      return `'${toolName}' needed approval (${reason}) and got no answer in time; the call did not run`;
    case 'withdrawn':
      return `The approval request for '${toolName}' was withdrawn${said}; the call did not run`;
    default:
      return `'${toolName}' needs approval (${reason}), and no client of the session's owner is connected to approve it; the call did not run`;
  }
}

/**
 * Reads the legacy positional parameters by count (see `ToolDispatcher.dispatch`) into an
 * invocation. The legacy entry has no call id.
 */
function legacyInvocation(n: number, toolName: string, argumentsJson: string, rest: unknown[]): ToolInvocation {
  const [a, b, c, d, e, f, g, h] = rest;
  const invocation: ToolInvocation = {
    callId: '',
    toolName,
    argumentsJson,
    executionMode: null,
    sessionId: null,
    userId: null,
    executionUserId: null,
    workspace: null,
    permissionLevel: null,
    modelConfig: null,
    sessionTools: null,
  };
  if (n <= 2) return invocation;
  if (n === 3) return { ...invocation, workspace: a as string | null };
  if (n === 5) return { ...invocation, executionMode: (a as string | null | undefined) ?? null, sessionId: (b as number | null | undefined) ?? null, workspace: c as string | null };
  if (n === 7) {
    return {
      ...invocation,
      executionMode: (a as string | null | undefined) ?? null,
      sessionId: (b as number | null | undefined) ?? null,
      workspace: (c as string | null | undefined) ?? null,
      permissionLevel: (d as string | null | undefined) ?? null,
      modelConfig: (e as LlmModelConfig | null | undefined) ?? null,
    };
  }
  return {
    ...invocation,
    executionMode: (a as string | null | undefined) ?? null,
    sessionId: (b as number | null | undefined) ?? null,
    userId: (c as number | null | undefined) ?? null,
    workspace: (d as string | null | undefined) ?? null,
    permissionLevel: (e as string | null | undefined) ?? null,
    modelConfig: (f as LlmModelConfig | null | undefined) ?? null,
    sessionTools: (g as Tool[] | null) ?? null,
    executionUserId: (h as number | null) ?? null,
  };
}

/**
 * Tools are typed to return strings; what a tool hands back otherwise (an object, `undefined`)
 * becomes text rather than passing on as something else.
 */
/** No limit: what a dispatcher without a budget hands the model. */
const UNLIMITED_OUTPUT: ToolOutputBudget = { maxChars: Infinity, maxErrorChars: Infinity, maxImageBytes: Infinity };

function toContent(raw: unknown): string {
  if (typeof raw === 'string') return raw;
  if (raw === undefined || raw === null) return '';
  try {
    return JSON.stringify(raw) ?? String(raw);
  } catch {
    return String(raw);
  }
}

function elapsed(started: number, now: number): number {
  return Math.max(0, Math.round((now - started) * 1000) / 1000);
}

function findSessionTool(sessionTools: Tool[] | null, toolName: string): Tool | undefined {
  return sessionTools?.find((tool) => tool.getName() === toolName);
}

function isAsyncShell(argumentsJson: string): boolean {
  const parsed = parseToolArguments(argumentsJson);
  return parsed.ok && Object.prototype.hasOwnProperty.call(parsed.args, 'async') && parsed.args.async === true;
}

/** A call's `ToolCallContext` scope: the tool reads the call's signal here, which is built only if it does. */
class CallScope implements ToolCallScope {
  constructor(
    readonly callId: string,
    private readonly call: CallSignal | undefined,
    readonly onProgress: ToolCallScope['onProgress'],
  ) {}

  get signal(): AbortSignal | undefined {
    return this.call?.signal;
  }
}

function resultOf(settled: Settled): ToolResult {
  return settled.result;
}

/** Whether a value is a promise or another thenable (what `await` would wait for). */
function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/**
 * Resolves `null` when `execution` settles first, or the call's reason when it is stopped first
 * (at once if it already was). The caller closes the call afterwards, which drops the listener.
 */
function untilAborted(execution: Promise<unknown>, call: CallSignal | undefined): Promise<unknown> {
  if (call === undefined) return execution.then(() => null, () => null);
  return new Promise((resolve) => {
    call.onAbort((reason) => resolve(reason ?? new Error('aborted')));
    const settle = (): void => resolve(null);
    execution.then(settle, settle);
  });
}
