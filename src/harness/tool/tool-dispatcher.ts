import type { BackgroundTaskManager } from '../runtime/background-task-manager';
import type { LlmModelConfig } from '../llm/chat-request';
import type { LocalToolExecutor } from '../local/local-tool-executor';
import type { LocalToolSessionRegistry } from '../local/local-tool-session-registry';
import type { AskUserQuestionsRegistry } from './ask-user-questions-registry';
import type { DangerAssessor } from './danger-assessor';
import { validateAskUserQuestionsArguments } from './ask-user-questions-arguments';
import { parsePermissionLevel } from './permission-level';
import { callTool, type Tool, type ToolReturn } from './tool';
import type { AttachmentStore } from './attachment-store';
import { isToolOutput } from './tool-output';
import { budgetResult, resultFromOutput, type ResultStorage, type ToolOutputBudget } from './tool-output-result';
import { saveFullOutput } from './full-output-file';
import type { ToolDescriptor } from './tool-descriptor';
import { ToolCallContext } from './tool-call-context';
import { UnknownToolError } from './tool-errors';
import type { ToolInvocation } from './tool-invocation';
import type { ToolRegistry } from './tool-registry';
import { normalizeToolResult, type ToolResult } from './tool-result';
import { errorMessage } from '../runtime/error-message';

/**
 * Tool names with this prefix are MCP tools (`mcp__<server>__<tool>`).
 * Fallback only: whether a tool is an MCP tool is a fact of its descriptor (`source: 'mcp'`);
 * the prefix test covers tools without one. Do not add new consumers.
 */
export const MCP_TOOL_PREFIX = 'mcp__';

/** Tools that run on the server whatever the execution mode: the session's todo list lives there. */
export const SERVER_ONLY_TOOLS: ReadonlySet<string> = new Set(['task_create', 'task_update', 'task_list', 'task_delete']);

/** Tools that change files. */
export const WRITE_TOOLS: ReadonlySet<string> = new Set(['write_file', 'edit_file']);

export const ASK_USER_QUESTIONS_TOOL = 'ask_user_questions';
export const SHELL_TOOL = 'shell';

/** The built-in tools a desktop client runs in LOCAL mode, known by name even where not registered. */
export const DESKTOP_BUILTIN_TOOLS: ReadonlySet<string> = new Set(['read_file', 'write_file', 'edit_file', 'glob', 'grep', SHELL_TOOL]);

/** Whether a call needs the user's approval before it runs, and why. */
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
  /** How long `ask_user_questions` waits for an answer (default 10 minutes). */
  askTimeoutMs?: number;
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

/** What a tool without a descriptor (or with no instance here, e.g. a desktop tool) is taken for. */
function defaultDescriptor(toolName: string): ToolDescriptor {
  return { name: toolName, source: 'builtin', executor: 'server' };
}

/**
 * The single policy centre for tool calls: where a call runs (server, desktop, MCP server),
 * whether it needs approval, and the special cases (`ask_user_questions`, server-only tools,
 * background shell on the desktop).
 */
export class ToolDispatcher {
  private readonly registry: ToolRegistry;
  private readonly localExecutor: LocalToolExecutor | null;
  private readonly localSessions: LocalToolSessionRegistry | null;
  private readonly askUserQuestions: AskUserQuestionsRegistry | null;
  private readonly dangerAssessor: DangerAssessor | null;
  private readonly permissionLookup: PermissionLevelLookup | null;
  private readonly backgroundTasks: BackgroundTaskManager | null;
  private readonly askTimeoutMs: number;
  private readonly callTimeoutMs: number | null;
  private readonly attachments: AttachmentStore | null;
  private readonly outputBudget: ToolOutputBudget | null;
  /** Invocations built by the light legacy forms, which take the registry-only cloud path. */
  private readonly lightInvocations = new WeakSet<ToolInvocation>();
  /** What a failed call threw, so the legacy entry can throw it again. */
  private readonly thrown = new WeakMap<ToolResult, unknown>();
  /** A clock for `durationMs`; injectable for tests. */
  private readonly now: () => number;

  constructor(deps: ToolDispatcherDeps) {
    this.registry = deps.registry;
    this.localExecutor = deps.localExecutor ?? null;
    this.localSessions = deps.localSessions ?? null;
    this.askUserQuestions = deps.askUserQuestions ?? null;
    this.dangerAssessor = deps.dangerAssessor ?? null;
    this.permissionLookup = deps.permissionLookup ?? null;
    this.backgroundTasks = deps.backgroundTasks ?? null;
    this.askTimeoutMs = deps.askTimeoutMs ?? 10 * 60_000;
    this.callTimeoutMs = deps.callTimeoutMs ?? null;
    this.attachments = deps.attachments ?? null;
    this.outputBudget = deps.outputBudget ?? null;
    this.now = deps.now ?? (() => performance.now());
  }

  /**
   * The entry for every tool call: resolves the tool's descriptor, dispatches the call (the
   * branches of `dispatchFull`, or the light cloud path for invocations from the legacy light
   * forms) and normalizes what the tool returned. Never throws: an exception becomes an `error`
   * result whose content is what the agent loop used to make of it, `Tool execution failed: …`.
   */
  async dispatchInvocation(invocation: ToolInvocation): Promise<ToolResult> {
    // A call that can be cancelled or watched runs in its scope, so the tool reads its signal
    // and reports progress; one that cannot (the legacy entry) takes the path it always took.
    if (invocation.signal === undefined && invocation.onProgress === undefined && this.callTimeoutMs === null) {
      return this.execute(invocation);
    }
    const signal = this.callSignal(invocation.signal);
    const scope = { callId: invocation.callId, signal, onProgress: invocation.onProgress };
    const started = this.now();
    // A call whose run was cancelled before it started runs nothing.
    const execution = signal?.aborted ? null : ToolCallContext.runScope(scope, () => this.execute(invocation));
    const stopped = execution === null ? signal?.reason : await untilAborted(execution, signal);
    if (execution !== null && stopped === null) return execution;
    // The tool is told (its signal fired) but not waited for: a tool that ignores its signal
    // must not hold the run.
    const message =
      // AbortSignal.timeout's reason is a DOMException named TimeoutError.
      (stopped as { name?: unknown } | undefined)?.name === 'TimeoutError'
        ? `the tool did not finish within ${this.callTimeoutMs} ms`
        : 'the run was cancelled before the tool finished';
    return { callId: invocation.callId, status: 'error', content: `Tool execution failed: ${message}`, errorMessage: message, durationMs: elapsed(started, this.now()) };
  }

  /**
   * A tool's answer as a result: a `ToolOutput`'s parts and status are facts; a bare string
   * (legacy tools, desktop answers) goes through `normalizeToolResult`'s text rule. Either way the
   * text the model reads is then held to the output budget, when one is set.
   */
  private async toResult(invocation: ToolInvocation, raw: unknown, durationMs: number): Promise<ToolResult> {
    const storage: ResultStorage = {
      store: this.attachments,
      sessionId: invocation.sessionId,
      executionId: invocation.executionId ?? null,
      toolCallId: invocation.callId,
      toolName: invocation.toolName,
      saveFullText: invocation.executionMode === 'LOCAL' || !invocation.workspace ? undefined : (text) => saveFullOutput(invocation.workspace!, invocation.callId, text),
    };
    const result = isToolOutput(raw)
      ? resultFromOutput(raw, storage, this.outputBudget ?? UNLIMITED_OUTPUT, durationMs)
      : normalizeToolResult(invocation.callId, toContent(raw), durationMs);
    return this.outputBudget ? budgetResult(result, storage, this.outputBudget) : result;
  }

  /** The call's signal: the run's, and the dispatcher's deadline for any call when one is set. */
  private callSignal(runSignal: AbortSignal | undefined): AbortSignal | undefined {
    if (this.callTimeoutMs === null) return runSignal;
    const deadline = AbortSignal.timeout(this.callTimeoutMs);
    return runSignal ? AbortSignal.any([runSignal, deadline]) : deadline;
  }

  private async execute(invocation: ToolInvocation): Promise<ToolResult> {
    const started = this.now();
    try {
      const raw = this.lightInvocations.has(invocation)
        ? await this.dispatchCloud(invocation.toolName, invocation.argumentsJson, invocation.workspace)
        : await this.dispatchFull(
            invocation.toolName,
            invocation.argumentsJson,
            invocation.executionMode,
            invocation.sessionId,
            invocation.userId,
            invocation.workspace,
            invocation.permissionLevel,
            invocation.modelConfig,
            invocation.sessionTools,
            invocation.executionUserId,
            this.resolveDescriptor(invocation.toolName, invocation.sessionTools),
          );
      return await this.toResult(invocation, raw, elapsed(started, this.now()));
    } catch (error) {
      const message = errorMessage(error);
      const result: ToolResult = {
        callId: invocation.callId,
        status: 'error',
        content: 'Tool execution failed: ' + message,
        errorMessage: message,
        durationMs: elapsed(started, this.now()),
      };
      this.thrown.set(result, error);
      return result;
    }
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
   * Compatibility entry: it builds a `ToolInvocation` and forwards to `dispatchInvocation`, so every
   * call takes one path. Production code calls `dispatchInvocation`.
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
    if (arguments.length <= 3) this.lightInvocations.add(invocation);
    return this.dispatchInvocation(invocation).then((result) => {
      if (this.thrown.has(result)) throw this.thrown.get(result);
      return result.content;
    });
  }

  /** The light cloud path: the registry only, no session. */
  async dispatchCloud(toolName: string, argumentsJson: string, workspace: string | null): Promise<ToolReturn> {
    const tool = this.registry.get(toolName);
    if (!tool) throw new UnknownToolError(toolName);
    return callTool(tool, argumentsJson, undefined, undefined, workspace ?? undefined);
  }

  /** The full path, checked in order: ask_user_questions, server-only tools, LOCAL, CLOUD. */
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
    descriptor: ToolDescriptor = this.resolveDescriptor(toolName, sessionTools),
  ): Promise<ToolReturn> {
    const runAs = executionUserId ?? userId;
    if (toolName === ASK_USER_QUESTIONS_TOOL) {
      return this.askUser(sessionId, argumentsJson);
    }
    if (SERVER_ONLY_TOOLS.has(toolName)) {
      const tool = this.registry.get(toolName);
      if (!tool) throw new UnknownToolError(toolName);
      return callTool(tool, argumentsJson, sessionId, runAs, workspace);
    }
    if (executionMode === 'LOCAL') {
      const known = DESKTOP_BUILTIN_TOOLS.has(toolName) || this.registry.get(toolName) !== undefined || findSessionTool(sessionTools, toolName) !== undefined;
      return this.dispatchLocal(descriptor, known, toolName, argumentsJson, sessionId, workspace, permissionLevel, modelConfig);
    }
    const tool = this.registry.get(toolName) ?? findSessionTool(sessionTools, toolName);
    if (!tool) throw new UnknownToolError(toolName);
    return callTool(tool, argumentsJson, sessionId, runAs, workspace);
  }

  /**
   * Whether a call needs the user's approval at a permission level. An unknown or missing level
   * is READ_ONLY. A tool is an MCP tool when its descriptor says so (`source: 'mcp'`), whatever
   * its name; the `mcp__` prefix is the fallback for tools without a descriptor. At SMART a shell
   * command is judged by the danger assessor; without a model configuration, or when the assessor
   * fails, it needs approval.
   */
  async shouldRequireApproval(
    descriptor: ToolDescriptor,
    toolName: string,
    level: string | null,
    argumentsJson: string,
    modelConfig: LlmModelConfig | null,
  ): Promise<ApprovalDecision> {
    // The descriptor is the fact; the name prefix is the fallback for tools that have none.
    const isMcpTool = descriptor.source === 'mcp' || toolName.startsWith(MCP_TOOL_PREFIX);
    const isShell = toolName === SHELL_TOOL;
    switch (parsePermissionLevel(level)) {
      case 'FULL':
        return { required: false, reason: null };
      case 'READ_WRITE':
        if (isShell) return { required: true, reason: 'Shell commands need approval at READ_WRITE' };
        if (isMcpTool) return { required: true, reason: 'MCP tools need approval at READ_WRITE' };
        return { required: false, reason: null };
      case 'SMART': {
        if (isMcpTool) return { required: true, reason: 'MCP tools are not assessed automatically and need approval' };
        if (!isShell) return { required: false, reason: null };
        const command = readShellCommand(argumentsJson);
        if (command === null) return { required: true, reason: 'The shell command could not be read' };
        if (!this.dangerAssessor) return { required: true, reason: 'No assessor is configured for shell commands' };
        const verdict = await this.dangerAssessor.assess(command, modelConfig);
        return verdict.dangerous ? { required: true, reason: verdict.reason } : { required: false, reason: null };
      }
      case 'READ_ONLY':
      default:
        if (isShell) return { required: true, reason: 'Shell commands need approval at READ_ONLY' };
        if (WRITE_TOOLS.has(toolName)) return { required: true, reason: 'File changes need approval at READ_ONLY' };
        if (isMcpTool) return { required: true, reason: 'MCP tools need approval at READ_ONLY' };
        return { required: false, reason: null };
    }
  }

  /**
   * The descriptor of the tool a name resolves to: the registry first, then the session's tools
   * (as the CLOUD path looks them up), asking the instance when it can describe itself. A name
   * with no instance here — the usual case for desktop tools in LOCAL mode — or an instance
   * without `getDescriptor` is taken for a built-in server tool.
   */
  private resolveDescriptor(toolName: string, sessionTools: Tool[] | null): ToolDescriptor {
    const tool = this.registry.get(toolName) ?? findSessionTool(sessionTools, toolName);
    if (tool && typeof tool.getDescriptor === 'function') return tool.getDescriptor();
    return defaultDescriptor(toolName);
  }

  /**
   * A LOCAL call goes to the desktop with the approval its level asks for. A name the server
   * knows nothing about (no built-in, registered or session tool) needs approval below FULL: the
   * desktop might run a tool of that name, and nothing here can say what it does.
   */
  private async dispatchLocal(
    descriptor: ToolDescriptor,
    known: boolean,
    toolName: string,
    argumentsJson: string,
    sessionId: number | null,
    workspace: string | null,
    permissionLevel: string | null,
    modelConfig: LlmModelConfig | null,
  ): Promise<string> {
    if (!this.localExecutor) {
      return JSON.stringify({ error: 'LOCAL execution is not available on this server' });
    }
    if (sessionId == null) {
      return JSON.stringify({ error: `LOCAL tool '${toolName}' needs a session` });
    }
    // The user may change the level mid-run; the stored level wins over the one the run started with.
    const currentLevel = this.permissionLookup?.getPermissionLevel(sessionId) ?? permissionLevel;
    const approval: ApprovalDecision = !known && parsePermissionLevel(currentLevel) !== 'FULL'
      ? { required: true, reason: `'${toolName}' is not a tool this server knows; the desktop would run it unchecked` }
      : await this.shouldRequireApproval(descriptor, toolName, currentLevel, argumentsJson, modelConfig);
    if (toolName === SHELL_TOOL && this.backgroundTasks && isAsyncShell(argumentsJson)) {
      const work = this.localExecutor.execute(sessionId, toolName, argumentsJson, workspace, approval.required, approval.reason);
      const taskId = this.backgroundTasks.start(sessionId, `shell: ${readShellCommand(argumentsJson) ?? ''}`, work);
      return JSON.stringify({
        status: 'started',
        task_id: taskId,
        message: 'The command runs on the desktop in the background; its result arrives with the next round.',
      });
    }
    return this.localExecutor.execute(sessionId, toolName, argumentsJson, workspace, approval.required, approval.reason);
  }

  private async askUser(sessionId: number | null, argumentsJson: string): Promise<string> {
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
    // Every client that showed the questions closing means nobody can answer them: stop waiting.
    const delivery = sessions.sendWatched(sessionId, 'ask_user_questions', data, () => {
      registry.cancel(requestId, 'the client disconnected before answering');
    });
    if (delivery.delivered === 0) {
      registry.cancel(requestId, 'no client received the questions');
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
      delivery.release();
    }
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
  if (n === 5) return { ...invocation, executionMode: a as string | null, sessionId: b as number | null, workspace: c as string | null };
  if (n === 7) {
    return {
      ...invocation,
      executionMode: a as string | null,
      sessionId: b as number | null,
      workspace: c as string | null,
      permissionLevel: d as string | null,
      modelConfig: e as LlmModelConfig | null,
    };
  }
  return {
    ...invocation,
    executionMode: a as string | null,
    sessionId: b as number | null,
    userId: c as number | null,
    workspace: d as string | null,
    permissionLevel: e as string | null,
    modelConfig: f as LlmModelConfig | null,
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

function parseObject(argumentsJson: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(argumentsJson);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function readShellCommand(argumentsJson: string): string | null {
  const command = parseObject(argumentsJson)?.command;
  return typeof command === 'string' ? command : null;
}

function isAsyncShell(argumentsJson: string): boolean {
  return parseObject(argumentsJson)?.async === true;
}

/**
 * Resolves `null` when `execution` settles first, or the signal's reason when the signal fires
 * first (at once if it already has). The listener is removed either way.
 */
function untilAborted(execution: Promise<unknown>, signal: AbortSignal | undefined): Promise<unknown> {
  if (signal === undefined) return execution.then(() => null, () => null);
  return new Promise((resolve) => {
    const onAbort = (): void => resolve(signal.reason ?? new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const settle = (): void => {
      signal.removeEventListener('abort', onAbort);
      resolve(null);
    };
    execution.then(settle, settle);
  });
}
