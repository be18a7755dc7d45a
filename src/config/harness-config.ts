import { randomBytes } from 'node:crypto';
import { createLlmModelConfigFromEnv, type LlmProtocol } from '../harness/llm/llm-adapter-facade';
import { DEFAULT_LLM_LIMITS } from '../harness/llm/llm-limits';
import type { ScriptedScenario } from '../harness/llm/scripted-llm-adapter';
import { MAX_TIMER_MS, type McpServerConfig } from '../harness/mcp/mcp-server-config';
import { DEFAULT_TOOL_OUTPUT_BUDGET } from '../harness/tool/tool-output-result';
import { SHELL_ISOLATION_MODES, type ShellIsolationMode } from '../harness/tool/impl/shell-isolation';
import { ConfigError } from './config-error';
import { readMcpServers, readScenario } from './config-files';
import { DEFAULT_APPROVAL_TIMEOUT_MS } from '../harness/tool/approval-requests';
import { readDbPath, readWorkspaceRoot } from './storage-paths';

export { ConfigError } from './config-error';

/** Everything the server reads from its environment (interface.md, "Process and configuration"). */
export interface HarnessConfig {
  host: string;
  port: number;
  dbPath: string;
  workspaceRoot: string;
  /** token → user id */
  tokens: Map<string, number>;
  /** Set when no HARNESS_TOKENS was given: the one token the server made for user 1. */
  generatedToken: string | null;
  /**
   * The MCP servers of the file `HARNESS_MCP_CONFIG` names, read and validated at start (empty
   * without one), so that a bad file stops the server before anything else starts.
   */
  mcpServers: McpServerConfig[];
  /** `HARNESS_MCP_IDLE_TIMEOUT_MS`: a session's MCP clients close after this long unused (0: never). */
  mcpIdleTimeoutMs: number;
  /** `HARNESS_MCP_CALL_TIMEOUT_MS`: an MCP call with no answer and no progress for this long fails. */
  mcpCallTimeoutMs: number;
  /** What one tool result may show the model (`HARNESS_TOOL_OUTPUT_MAX_CHARS`, `HARNESS_TOOL_ERROR_MAX_CHARS`, `HARNESS_TOOL_IMAGE_MAX_BYTES`). */
  toolOutput: { maxChars: number; maxErrorChars: number; maxImageBytes: number };
  /** `HARNESS_TOOL_TIMEOUT_MS`: the longest any tool call may take before it is stopped. */
  toolTimeoutMs: number;
  /** `HARNESS_APPROVAL_TIMEOUT_MS`: how long a call waits for its owner's approval. */
  approvalTimeoutMs: number;
  /** `HARNESS_QUESTION_TIMEOUT_MS`: how long `ask_user_questions` waits for its answer. */
  questionTimeoutMs: number;
  /** `HARNESS_LOCAL_TOOL_TIMEOUT_MS`: how long a LOCAL tool request waits for the desktop's answer, approval included. */
  localToolTimeoutMs: number;
  /** `HARNESS_EVENT_LOG_MAX_PER_SESSION`: most events a session's event log keeps (default 10,000). */
  eventLogMaxPerSession: number;
  /** `HARNESS_WS_SEND_BUFFER_BYTES`: most bytes held unsent for one WebSocket connection. */
  wsSendBufferBytes: number | null;
  cloudShell: boolean;
  /** `HARNESS_SHELL_ENV`: names of server variables copied into `shell` commands' environment. */
  shellEnv: string[];
  /** `HARNESS_SHELL_ISOLATION`: how `shell` commands are confined (default `auto`). */
  shellIsolation: ShellIsolationMode;
  llm: {
    /** `LLM_PROTOCOL` as one of the known protocols: an unknown name is `openai`, as the facade routes it. */
    protocol: LlmProtocol;
    baseUrl: string | null;
    apiKey: string | null;
    /** `LLM_MODEL`, else the protocol's default (`DEFAULT_MODELS`). */
    model: string;
    /**
     * What the `scripted` protocol answers: the scenario of `LLM_SCRIPT` (inline JSON, or a JSON
     * file's path), read and validated at start, else the bundled demo scenario.
     */
    scenario: ScriptedScenario;
    /** `LLM_HEADERS_TIMEOUT_MS`: longest wait for a provider's response headers, per attempt. */
    headersTimeoutMs: number;
    /** `LLM_IDLE_TIMEOUT_MS`: longest silence in a provider's response body. */
    idleTimeoutMs: number;
    /** `LLM_MAX_ANSWER_CHARS`: most characters one streamed answer may carry. */
    maxAnswerChars: number;
  };
}

/** Default of `HARNESS_EVENT_LOG_MAX_PER_SESSION` (the event log's own default, `SessionEventLog`). */
export const DEFAULT_EVENT_LOG_MAX_PER_SESSION = 10_000;

export function loadHarnessConfig(env: NodeJS.ProcessEnv = process.env): HarnessConfig {
  const { tokens, generatedToken } = readTokens(env.HARNESS_TOKENS);
  const llm = createLlmModelConfigFromEnv(env);
  return {
    host: nonEmpty(env.HOST) ?? '127.0.0.1',
    port: readPort(env.PORT),
    dbPath: readDbPath(nonEmpty(env.HARNESS_DB)),
    workspaceRoot: readWorkspaceRoot(nonEmpty(env.HARNESS_WORKSPACE_ROOT)),
    tokens,
    generatedToken,
    mcpServers: readMcpServers(nonEmpty(env.HARNESS_MCP_CONFIG)),
    mcpIdleTimeoutMs: readMilliseconds('HARNESS_MCP_IDLE_TIMEOUT_MS', env.HARNESS_MCP_IDLE_TIMEOUT_MS, 600_000),
    mcpCallTimeoutMs: readTimerMilliseconds('HARNESS_MCP_CALL_TIMEOUT_MS', env.HARNESS_MCP_CALL_TIMEOUT_MS, 60_000),
    toolOutput: {
      maxChars: readWholeNumber('HARNESS_TOOL_OUTPUT_MAX_CHARS', env.HARNESS_TOOL_OUTPUT_MAX_CHARS, DEFAULT_TOOL_OUTPUT_BUDGET.maxChars, 'characters', 100),
      maxErrorChars: readWholeNumber('HARNESS_TOOL_ERROR_MAX_CHARS', env.HARNESS_TOOL_ERROR_MAX_CHARS, DEFAULT_TOOL_OUTPUT_BUDGET.maxErrorChars, 'characters', 100),
      maxImageBytes: readWholeNumber('HARNESS_TOOL_IMAGE_MAX_BYTES', env.HARNESS_TOOL_IMAGE_MAX_BYTES, DEFAULT_TOOL_OUTPUT_BUDGET.maxImageBytes, 'bytes', 0),
    },
    toolTimeoutMs: readTimerMilliseconds('HARNESS_TOOL_TIMEOUT_MS', env.HARNESS_TOOL_TIMEOUT_MS, 3_600_000),
    approvalTimeoutMs: readTimerMilliseconds('HARNESS_APPROVAL_TIMEOUT_MS', env.HARNESS_APPROVAL_TIMEOUT_MS, DEFAULT_APPROVAL_TIMEOUT_MS),
    questionTimeoutMs: readTimerMilliseconds('HARNESS_QUESTION_TIMEOUT_MS', env.HARNESS_QUESTION_TIMEOUT_MS, 600_000),
    localToolTimeoutMs: readTimerMilliseconds('HARNESS_LOCAL_TOOL_TIMEOUT_MS', env.HARNESS_LOCAL_TOOL_TIMEOUT_MS, 300_000),
    eventLogMaxPerSession: readWholeNumber('HARNESS_EVENT_LOG_MAX_PER_SESSION', env.HARNESS_EVENT_LOG_MAX_PER_SESSION, DEFAULT_EVENT_LOG_MAX_PER_SESSION, 'events', 100),
    // Unset: the registry's own default (8 MiB).
    wsSendBufferBytes: readOptionalWholeNumber('HARNESS_WS_SEND_BUFFER_BYTES', env.HARNESS_WS_SEND_BUFFER_BYTES, 'bytes', 1),
    cloudShell: readSwitch('HARNESS_CLOUD_SHELL', env.HARNESS_CLOUD_SHELL),
    shellEnv: readShellEnv(env.HARNESS_SHELL_ENV),
    shellIsolation: readShellIsolation(env.HARNESS_SHELL_ISOLATION),
    llm: {
      // One reading of the LLM_* variables, shared with the facade, so config and routing agree.
      protocol: llm.protocol,
      baseUrl: llm.baseUrl,
      apiKey: llm.apiKey,
      model: llm.model,
      scenario: readScenario(llm.protocol, nonEmpty(env.LLM_SCRIPT)),
      // No run may wait on a provider forever, nor take an answer without end: 0 is refused.
      headersTimeoutMs: readTimerMilliseconds('LLM_HEADERS_TIMEOUT_MS', env.LLM_HEADERS_TIMEOUT_MS, DEFAULT_LLM_LIMITS.headersTimeoutMs),
      idleTimeoutMs: readTimerMilliseconds('LLM_IDLE_TIMEOUT_MS', env.LLM_IDLE_TIMEOUT_MS, DEFAULT_LLM_LIMITS.idleTimeoutMs),
      maxAnswerChars: readWholeNumber('LLM_MAX_ANSWER_CHARS', env.LLM_MAX_ANSWER_CHARS, DEFAULT_LLM_LIMITS.maxAnswerChars, 'characters', 1),
    },
  };
}

function nonEmpty(value: string | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}

function readPort(value: string | undefined): number {
  const text = nonEmpty(value);
  if (text === null) return 3000;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError('PORT', `expected a port number from 0 to 65535, got '${text}'`);
  }
  return port;
}

function readMilliseconds(variable: string, value: string | undefined, fallback: number): number {
  return readWholeNumber(variable, value, fallback, 'milliseconds', 0);
}


/** Milliseconds for a timer that must fire: 1 or more, and within what `setTimeout` can wait. */
function readTimerMilliseconds(variable: string, value: string | undefined, fallback: number): number {
  return readWholeNumber(variable, value, fallback, 'milliseconds', 1, MAX_TIMER_MS);
}

/** A whole number when the variable is set, `null` when it is not (the consumer's own default applies). */
function readOptionalWholeNumber(variable: string, value: string | undefined, unit: string, min: number): number | null {
  return nonEmpty(value) === null ? null : readWholeNumber(variable, value, min, unit, min);
}

function readWholeNumber(
  variable: string,
  value: string | undefined,
  fallback: number,
  unit: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const text = nonEmpty(value);
  if (text === null) return fallback;
  const count = Number(text);
  if (!/^\d+$/.test(text) || count < min || count > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `${min} to ${max}`;
    throw new ConfigError(variable, `expected a whole number of ${unit} (${range}), got '${text}'`);
  }
  return count;
}

function readSwitch(variable: string, value: string | undefined): boolean {
  const text = (nonEmpty(value) ?? 'off').toLowerCase();
  if (['on', 'true', '1', 'yes'].includes(text)) return true;
  if (['off', 'false', '0', 'no'].includes(text)) return false;
  throw new ConfigError(variable, `expected 'on' or 'off', got '${value}'`);
}

/** Variables that hold the server's own secrets; passing them to commands would defeat the allow-list. */
const SERVER_SECRETS = ['HARNESS_TOKENS', 'LLM_API_KEY'];

/** Comma-separated variable names; blanks between commas are ignored, duplicates kept once. */
function readShellEnv(value: string | undefined): string[] {
  const names: string[] = [];
  for (const name of (nonEmpty(value) ?? '').split(',').map((part) => part.trim()).filter(Boolean)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new ConfigError('HARNESS_SHELL_ENV', `expected comma-separated variable names, got '${name}'`);
    }
    if (SERVER_SECRETS.includes(name)) {
      throw new ConfigError('HARNESS_SHELL_ENV', `${name} holds the server's own secrets and is never passed to commands`);
    }
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

function readShellIsolation(value: string | undefined): ShellIsolationMode {
  const text = (nonEmpty(value) ?? 'auto').toLowerCase();
  const mode = SHELL_ISOLATION_MODES.find((candidate) => candidate === text);
  if (mode === undefined) throw new ConfigError('HARNESS_SHELL_ISOLATION', `expected 'auto', 'namespace' or 'none', got '${value}'`);
  return mode;
}

function readTokens(value: string | undefined): { tokens: Map<string, number>; generatedToken: string | null } {
  const text = nonEmpty(value);
  if (text === null) {
    const token = randomBytes(24).toString('base64url');
    return { tokens: new Map([[token, 1]]), generatedToken: token };
  }
  const tokens = new Map<string, number>();
  for (const pair of text.split(',').map((part) => part.trim()).filter(Boolean)) {
    const at = pair.lastIndexOf('=');
    const token = at > 0 ? pair.slice(0, at).trim() : '';
    const userId = Number(at > 0 ? pair.slice(at + 1).trim() : NaN);
    if (!token || !Number.isInteger(userId) || userId <= 0) {
      throw new ConfigError('HARNESS_TOKENS', `expected comma-separated 'token=userId' pairs, got '${pair}'`);
    }
    if (tokens.has(token)) throw new ConfigError('HARNESS_TOKENS', 'a token is listed twice');
    tokens.set(token, userId);
  }
  if (tokens.size === 0) throw new ConfigError('HARNESS_TOKENS', 'no token given');
  return { tokens, generatedToken: null };
}
