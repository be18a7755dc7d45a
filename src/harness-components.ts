import * as fs from 'node:fs';
import * as path from 'node:path';
import { AgentLoop } from './harness/core/agent-loop';
import { BackgroundTaskManager } from './harness/core/background-task-manager';
import type { LlmModelConfig } from './harness/llm/chat-request';
import { AnthropicLlmAdapter } from './harness/llm/anthropic-llm-adapter';
import type { LlmAdapter } from './harness/llm/llm-adapter';
import { LlmAdapterFacade } from './harness/llm/llm-adapter-facade';
import { OpenAiLlmAdapter } from './harness/llm/openai-llm-adapter';
import { ResponsesLlmAdapter } from './harness/llm/responses-llm-adapter';
import { loadScenarioFile, parseScenario, ScriptedLlmAdapter } from './harness/llm/scripted-llm-adapter';
import { ApprovalRegistry } from './harness/local/approval-registry';
import { LocalToolExecutor } from './harness/local/local-tool-executor';
import { LocalToolSessionRegistry } from './harness/local/local-tool-session-registry';
import { McpClientManager } from './harness/mcp/mcp-client-manager';
import { loadMcpConfigFile, type McpServerConfig } from './harness/mcp/mcp-server-config';
import { AskUserQuestionsRegistry } from './harness/tool/ask-user-questions-registry';
import { DangerAssessor, LlmDangerClassifierModel } from './harness/tool/danger-assessor';
import { createBuiltinTools } from './harness/tool/impl/builtin-tools';
import { shellEnvironment } from './harness/tool/impl/shell-environment';
import { ShellIsolation } from './harness/tool/impl/shell-isolation';
import { canOpenBeneath } from './harness/tool/workspace-open';
import { ToolDispatcher } from './harness/tool/tool-dispatcher';
import type { Tool } from './harness/tool/tool';
import { ToolRegistry } from './harness/tool/tool-registry';
import type { HarnessConfig } from './config/harness-config';
import { demoScenario } from './demo/demo-scenario';
import { TokenAuthenticator } from './session/auth/token-authenticator';
import { ActivityRepository } from './session/persistence/activity-repository';
import { HarnessDatabase } from './session/persistence/harness-database';
import { MessageRepository } from './session/persistence/message-repository';
import { RunRepository } from './session/persistence/run-repository';
import { SessionRepository } from './session/persistence/session-repository';
import { SqliteTaskStore } from './session/persistence/sqlite-task-store';
import { RunRecovery } from './session/run/run-recovery';
import { RunService } from './session/run/run.service';
import { SessionToolProvider } from './session/run/session-tool-provider';
import { SessionService } from './session/session-service';
import { ToolCatalog } from './session/tool-catalog';
import { StreamingWsRegistry } from './session/ws/streaming-ws-registry';

/** Every long-lived object of the server, built once from the configuration. */
export interface HarnessComponents {
  config: HarnessConfig;
  database: HarnessDatabase;
  authenticator: TokenAuthenticator;
  registry: ToolRegistry;
  dispatcher: ToolDispatcher;
  mcp: McpClientManager | null;
  llm: LlmAdapter;
  modelConfig: LlmModelConfig;
  sessions: SessionService;
  runs: RunService;
  toolCatalog: ToolCatalog;
  wsRegistry: StreamingWsRegistry;
  localSessions: LocalToolSessionRegistry;
  askUserQuestions: AskUserQuestionsRegistry;
}

/** What an embedding product adds to the server. */
export interface HarnessExtensions {
  /** Tools registered beside the built-in ones (names must not clash with them). */
  tools?: Tool[];
}

/** Builds the server's object graph: plain classes, constructor injection, no Nest. */
export function createHarnessComponents(config: HarnessConfig, extensions: HarnessExtensions = {}): HarnessComponents {
  const mcpServers: McpServerConfig[] = config.mcpConfigPath ? loadMcpConfigFile(config.mcpConfigPath) : [];
  fs.mkdirSync(config.workspaceRoot, { recursive: true });
  const database = new HarnessDatabase(config.dbPath);
  const sessionRepository = new SessionRepository(database);
  const messages = new MessageRepository(database);
  const activities = new ActivityRepository(database);
  const runRepository = new RunRepository(database);
  // Before anything can start a run: close the runs a previous process left unfinished, so their
  // sessions take messages again and their conversations answer every tool call.
  for (const recovered of new RunRecovery({ database, runs: runRepository, messages, activities }).recoverAll()) {
    process.stderr.write(
      `recovered run ${recovered.executionId} of session ${recovered.sessionId}, interrupted by a stop: ` +
        `${recovered.unansweredCalls.length} unfinished tool call(s) closed with an error\n`,
    );
  }
  const backgroundTasks = new BackgroundTaskManager();
  const shellIsolation = new ShellIsolation({ mode: config.shellIsolation, hiddenPaths: shellHiddenPaths(config) });
  // Probed at start so that a host without namespaces is reported now, not at the first command.
  if (config.cloudShell) void shellIsolation.check();
  if (config.cloudShell && !canOpenBeneath()) {
    process.stderr.write(
      'warning: /proc/self/fd is missing: the file tools open workspace paths without pinning their directories, ' +
        'so a shell command running in the background could swap a directory for a link and lead them out of its workspace; mount /proc\n',
    );
  }
  const registry = new ToolRegistry([
    ...createBuiltinTools({
      taskStore: new SqliteTaskStore(database),
      shell: {
        enabled: config.cloudShell,
        background: backgroundTasks,
        env: shellEnvironment(process.env, config.shellEnv),
        isolation: shellIsolation,
      },
    }),
    ...(extensions.tools ?? []),
  ]);
  const llm = createLlmAdapter(config);
  const modelConfig: LlmModelConfig = {
    protocol: config.llm.protocol,
    baseUrl: config.llm.baseUrl,
    apiKey: config.llm.apiKey,
    model: config.llm.model,
    headersTimeoutMs: config.llm.headersTimeoutMs,
    idleTimeoutMs: config.llm.idleTimeoutMs,
    maxAnswerChars: config.llm.maxAnswerChars,
  };
  const localSessions = new LocalToolSessionRegistry();
  const askUserQuestions = new AskUserQuestionsRegistry();
  const dispatcher = new ToolDispatcher({
    registry,
    localExecutor: new LocalToolExecutor(localSessions, new ApprovalRegistry()),
    localSessions,
    askUserQuestions,
    dangerAssessor: new DangerAssessor(new LlmDangerClassifierModel(llm)),
    permissionLookup: sessionRepository,
    backgroundTasks,
    callTimeoutMs: config.toolTimeoutMs,
  });
  const mcp = mcpServers.length > 0 ? new McpClientManager(mcpServers, { idleTimeoutMs: config.mcpIdleTimeoutMs, callTimeoutMs: config.mcpCallTimeoutMs }) : null;
  const sessionTools = new SessionToolProvider(mcp);
  const sessions = new SessionService({
    sessions: sessionRepository,
    messages,
    activities,
    workspaceRoot: config.workspaceRoot,
    builtinToolNames: () => registry.names(),
    mcpServers,
  });
  const wsRegistry = new StreamingWsRegistry({ sendBufferLimitBytes: config.wsSendBufferBytes });
  const runs = new RunService({
    agentLoop: new AgentLoop({ llm, dispatcher, registry, backgroundTasks }),
    sessions,
    messages,
    activities,
    runs: runRepository,
    database,
    wsRegistry,
    localSessions,
    askUserQuestions,
    sessionTools,
    modelConfig,
  });
  return {
    config,
    database,
    authenticator: new TokenAuthenticator(config.tokens),
    registry,
    dispatcher,
    mcp,
    llm,
    modelConfig,
    sessions,
    runs,
    toolCatalog: new ToolCatalog(registry, sessionTools),
    wsRegistry,
    localSessions,
    askUserQuestions,
  };
}

/**
 * One adapter per protocol behind the facade, which routes each call by the model config it is
 * given (the sessions' `modelConfig`, from `LLM_PROTOCOL`). `LLM_SCRIPT` is read only when the
 * server is scripted, as before: a scenario file nobody uses must not stop a server that talks to
 * a real provider; the bundled scenario stands in.
 */
function createLlmAdapter(config: HarnessConfig): LlmAdapter {
  const script = config.llm.protocol === 'scripted' ? config.llm.script : null;
  const scenario = script === null ? demoScenario() : script.startsWith('{') ? parseScenario(JSON.parse(script)) : loadScenarioFile(script);
  return new LlmAdapterFacade({
    openai: new OpenAiLlmAdapter(),
    anthropic: new AnthropicLlmAdapter(),
    responses: new ResponsesLlmAdapter(),
    scripted: new ScriptedLlmAdapter(scenario),
  });
}

/**
 * What confined `shell` commands must not see: the workspace root (other users' and sessions'
 * workspaces) and the database, which holds every user's messages — its whole directory, or,
 * where that directory is one the commands need (`/`, `/usr`, `/etc`, …), the database file and
 * its SQLite companions (`-wal`, `-shm`, `-journal`). Real paths, as the workspaces are.
 */
export function shellHiddenPaths(config: Pick<HarnessConfig, 'workspaceRoot' | 'dbPath'>): string[] {
  const real = (target: string) => {
    try {
      return fs.realpathSync(target);
    } catch {
      return target;
    }
  };
  const hidden = [real(config.workspaceRoot)];
  if (config.dbPath === ':memory:') return hidden;
  const dbDir = real(path.dirname(config.dbPath));
  if (!SYSTEM_DIRECTORIES.has(dbDir)) return [...hidden, dbDir];
  const dbFile = path.join(dbDir, path.basename(config.dbPath));
  return [...hidden, dbFile, `${dbFile}-wal`, `${dbFile}-shm`, `${dbFile}-journal`];
}

/** Directories a command cannot do without: the database is hidden file by file in these. */
const SYSTEM_DIRECTORIES = new Set(['/', '/bin', '/sbin', '/lib', '/lib64', '/usr', '/usr/bin', '/usr/lib', '/usr/local', '/etc', '/dev', '/proc', '/tmp', '/var', '/home', '/root']);
