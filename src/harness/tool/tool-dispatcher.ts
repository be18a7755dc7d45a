import type { BackgroundTaskManager } from '../core/background-task-manager';
import type { LlmModelConfig } from '../llm/chat-request';
import type { LocalToolExecutor } from '../local/local-tool-executor';
import type { LocalToolSessionRegistry } from '../local/local-tool-session-registry';
import type { AskUserQuestionsRegistry } from './ask-user-questions-registry';
import type { DangerAssessor } from './danger-assessor';
import { validateAskUserQuestionsArguments } from './impl/ask-user-questions-tool';
import { parsePermissionLevel } from './permission-level';
import { callTool, type Tool } from './tool';
import { UnknownToolError } from './tool-errors';
import type { ToolRegistry } from './tool-registry';

/** Tool names with this prefix are MCP tools (`mcp__<server>__<tool>`). */
export const MCP_TOOL_PREFIX = 'mcp__';

/** Tools that run on the server whatever the execution mode: the session's todo list lives there. */
export const SERVER_ONLY_TOOLS: ReadonlySet<string> = new Set(['task_create', 'task_update', 'task_list', 'task_delete']);

/** Tools that change files. */
export const WRITE_TOOLS: ReadonlySet<string> = new Set(['write_file', 'edit_file']);

export const ASK_USER_QUESTIONS_TOOL = 'ask_user_questions';
export const SHELL_TOOL = 'shell';

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
}

const NO_QUESTION_CLIENT = JSON.stringify({ error: 'No connected client to receive questions' });

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

  constructor(deps: ToolDispatcherDeps) {
    this.registry = deps.registry;
    this.localExecutor = deps.localExecutor ?? null;
    this.localSessions = deps.localSessions ?? null;
    this.askUserQuestions = deps.askUserQuestions ?? null;
    this.dangerAssessor = deps.dangerAssessor ?? null;
    this.permissionLookup = deps.permissionLookup ?? null;
    this.backgroundTasks = deps.backgroundTasks ?? null;
    this.askTimeoutMs = deps.askTimeoutMs ?? 10 * 60_000;
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
   * in CLOUD mode.
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
    const n = arguments.length;
    if (n <= 2) return this.dispatchCloud(toolName, argumentsJson, null);
    if (n === 3) return this.dispatchCloud(toolName, argumentsJson, a as string | null);
    if (n === 5) {
      return this.dispatchFull(toolName, argumentsJson, a as string | null, b as number | null, null, c as string | null, null, null, null, null);
    }
    if (n === 7) {
      return this.dispatchFull(
        toolName, argumentsJson, a as string | null, b as number | null, null, c as string | null,
        d as string | null, e as LlmModelConfig | null, null, null,
      );
    }
    return this.dispatchFull(
      toolName, argumentsJson, a as string | null, b as number | null, c as number | null, d as string | null,
      e as string | null, f as LlmModelConfig | null, (g as Tool[] | null) ?? null, (h as number | null) ?? null,
    );
  }

  /** The light cloud path: the registry only, no session. */
  async dispatchCloud(toolName: string, argumentsJson: string, workspace: string | null): Promise<string> {
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
  ): Promise<string> {
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
      return this.dispatchLocal(toolName, argumentsJson, sessionId, workspace, permissionLevel, modelConfig);
    }
    const tool = this.registry.get(toolName) ?? findSessionTool(sessionTools, toolName);
    if (!tool) throw new UnknownToolError(toolName);
    return callTool(tool, argumentsJson, sessionId, runAs, workspace);
  }

  /**
   * Whether a call needs the user's approval at a permission level. An unknown or missing level
   * is READ_ONLY. At SMART a shell command is judged by the danger assessor; without a model
   * configuration, or when the assessor fails, it needs approval.
   */
  async shouldRequireApproval(
    toolName: string,
    level: string | null,
    argumentsJson: string,
    modelConfig: LlmModelConfig | null,
  ): Promise<ApprovalDecision> {
    const isMcpTool = toolName.startsWith(MCP_TOOL_PREFIX);
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

  private async dispatchLocal(
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
    const approval = await this.shouldRequireApproval(toolName, currentLevel, argumentsJson, modelConfig);
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
    if (sessions.sendToSession(sessionId, 'ask_user_questions', data) === 0) {
      registry.cancel(requestId, 'no client received the questions');
      await answer.catch(() => undefined);
      return NO_QUESTION_CLIENT;
    }
    try {
      return JSON.stringify({ answers: await answer });
    } catch (error) {
      sessions.sendToSession(sessionId, 'ask_user_questions_cancelled', { requestId });
      const message = error instanceof Error ? error.message : String(error);
      return JSON.stringify({ error: `The questions were not answered: ${message}` });
    }
  }
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
