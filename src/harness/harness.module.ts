import { Module, type DynamicModule, type ModuleMetadata, type Provider } from '@nestjs/common';
import { HARNESS_CONFIG, HARNESS_EXTENSIONS, type HarnessExtensions } from '../config/config.module';
import type { HarnessConfig } from '../config/harness-config';
import { AgentLoop } from './core/agent-loop';
import { ExecutionScope } from './runtime/execution-scope';
import type { LlmModelConfig } from './llm/chat-request';
import { AnthropicLlmAdapter } from './llm/anthropic-llm-adapter';
import type { LlmAdapter } from './llm/llm-adapter';
import { LlmAdapterFacade } from './llm/llm-adapter-facade';
import { OpenAiLlmAdapter } from './llm/openai-llm-adapter';
import { ResponsesLlmAdapter } from './llm/responses-llm-adapter';
import { ScriptedLlmAdapter } from './llm/scripted-llm-adapter';
import { TracedLlmAdapter } from './llm/traced-llm-adapter';
import { ApprovalRegistry } from './local/approval-registry';
import type { ClientConnections } from './local/client-connections';
import { LocalToolExecutor } from './local/local-tool-executor';
import { LocalToolSessionRegistry } from './local/local-tool-session-registry';
import { McpClientManager } from './mcp/mcp-client-manager';
import type { McpServerConfig } from './mcp/mcp-server-config';
import { BackgroundTaskManager } from './runtime/background-task-manager';
import { ApprovalRequests } from './tool/approval-requests';
import { AskUserQuestionsRegistry } from './tool/ask-user-questions-registry';
import { ResumedAnswers } from './tool/resumed-answers';
import type { WaitStore } from './runtime/wait-store';
import { DangerAssessor, LlmDangerClassifierModel } from './tool/danger-assessor';
import { createBuiltinTools } from './tool/impl/builtin-tools';
import { shellEnvironment } from './tool/impl/shell-environment';
import { shellHiddenPaths } from './tool/impl/shell-hidden-paths';
import { ShellIsolation } from './tool/impl/shell-isolation';
import type { TaskStore } from './tool/impl/task-store';
import type { AttachmentStore } from './tool/attachment-store';
import { ToolDispatcher, type PermissionLevelLookup } from './tool/tool-dispatcher';
import { ToolRegistry } from './tool/tool-registry';
import { TracedToolDispatcher } from './tool/traced-tool-dispatcher';

/** Token of the model every run talks to (an `LlmAdapter`): the facade over the protocol adapters. */
export const LLM_ADAPTER = Symbol('LlmAdapter');
/** Token of the sessions' model configuration (`LlmModelConfig`, from `LLM_*`). */
export const LLM_MODEL_CONFIG = Symbol('LlmModelConfig');
/** Token of the MCP servers of `HARNESS_MCP_CONFIG` (`McpServerConfig[]`, empty without one). */
export const MCP_SERVERS = Symbol('McpServers');
/** Token the host provides: where the task tools keep the sessions' lists (a `TaskStore`). */
export const TASK_STORE = Symbol('TaskStore');
/** Token the host provides: the users' open client connections, which the LOCAL side sends on (a `ClientConnections`). */
export const CLIENT_CONNECTIONS = Symbol('ClientConnections');
/** Token the host provides: how the dispatcher reads a session's current permission level (a `PermissionLevelLookup`). */
export const PERMISSION_LEVEL_LOOKUP = Symbol('PermissionLevelLookup');
/** Token the host provides: where binary parts of tool results are kept, by id (an `AttachmentStore`). */
export const ATTACHMENT_STORE = Symbol('AttachmentStore');
/** Token the host provides: where waits for a person are kept while they wait (a `WaitStore`). */
export const WAIT_STORE = Symbol('WaitStore');

/** What `HarnessModule.forRoot` needs from its host. */
export interface HarnessModuleOptions {
  /**
   * Modules that export `TASK_STORE`, `PERMISSION_LEVEL_LOOKUP`, `ATTACHMENT_STORE`, `WAIT_STORE`
   * and `CLIENT_CONNECTIONS` (the server's: `PersistenceModule` and `StreamingWsModule`).
   */
  imports: NonNullable<ModuleMetadata['imports']>;
}

/** The providers of the harness: one factory per plain class, the class itself as token. */
function harnessProviders(): Provider[] {
  return [
    {
      // Read and validated by `loadHarnessConfig`: a bad file stops the server before Nest starts.
      provide: MCP_SERVERS,
      useFactory: (config: HarnessConfig): McpServerConfig[] => config.mcpServers,
      inject: [HARNESS_CONFIG],
    },
    {
      // Null when no MCP server is configured: sessions then have no MCP tools.
      provide: McpClientManager,
      useFactory: (servers: McpServerConfig[], config: HarnessConfig): McpClientManager | null =>
        servers.length > 0 ? new McpClientManager(servers, { idleTimeoutMs: config.mcpIdleTimeoutMs, callTimeoutMs: config.mcpCallTimeoutMs }) : null,
      inject: [MCP_SERVERS, HARNESS_CONFIG],
    },
    { provide: BackgroundTaskManager, useFactory: () => new BackgroundTaskManager() },
    {
      provide: ShellIsolation,
      useFactory: (config: HarnessConfig) => new ShellIsolation({ mode: config.shellIsolation, hiddenPaths: shellHiddenPaths(config) }),
      inject: [HARNESS_CONFIG],
    },
    {
      provide: ToolRegistry,
      useFactory: (config: HarnessConfig, extensions: HarnessExtensions, taskStore: TaskStore, backgroundTasks: BackgroundTaskManager, isolation: ShellIsolation) =>
        new ToolRegistry([
          ...createBuiltinTools({
            taskStore,
            shell: { enabled: config.cloudShell, background: backgroundTasks, env: shellEnvironment(process.env, config.shellEnv), isolation },
          }),
          ...(extensions.tools ?? []),
        ]),
      inject: [HARNESS_CONFIG, HARNESS_EXTENSIONS, TASK_STORE, BackgroundTaskManager, ShellIsolation],
    },
    {
      // On the host's connections (every socket registered once) and the process's execution scope.
      provide: LocalToolSessionRegistry,
      useFactory: (clients: ClientConnections) => new LocalToolSessionRegistry({ clients, executions: ExecutionScope }),
      inject: [CLIENT_CONNECTIONS],
    },
    { provide: ApprovalRegistry, useFactory: () => new ApprovalRegistry() },
    {
      provide: LocalToolExecutor,
      useFactory: (localSessions: LocalToolSessionRegistry, approvals: ApprovalRegistry, config: HarnessConfig, waits: WaitStore) =>
        new LocalToolExecutor(localSessions, approvals, { timeoutMs: config.localToolTimeoutMs, waits }),
      inject: [LocalToolSessionRegistry, ApprovalRegistry, HARNESS_CONFIG, WAIT_STORE],
    },
    { provide: AskUserQuestionsRegistry, useFactory: () => new AskUserQuestionsRegistry() },
    { provide: ResumedAnswers, useFactory: () => new ResumedAnswers() },
    {
      // CLOUD approvals reach the session owner's clients the way questions do (and are logged).
      provide: ApprovalRequests,
      useFactory: (localSessions: LocalToolSessionRegistry, config: HarnessConfig, waits: WaitStore) =>
        new ApprovalRequests(localSessions, { timeoutMs: config.approvalTimeoutMs, waits }),
      inject: [LocalToolSessionRegistry, HARNESS_CONFIG, WAIT_STORE],
    },
    { provide: OpenAiLlmAdapter, useFactory: () => new OpenAiLlmAdapter() },
    { provide: AnthropicLlmAdapter, useFactory: () => new AnthropicLlmAdapter() },
    { provide: ResponsesLlmAdapter, useFactory: () => new ResponsesLlmAdapter() },
    {
      // The scenario was read and validated by `loadHarnessConfig` (LLM_SCRIPT, or the bundled one).
      provide: ScriptedLlmAdapter,
      useFactory: (config: HarnessConfig) => new ScriptedLlmAdapter(config.llm.scenario),
      inject: [HARNESS_CONFIG],
    },
    {
      // One adapter per protocol behind the facade, which routes each call by the model config it
      // is given (the sessions' `LLM_MODEL_CONFIG`).
      provide: LlmAdapterFacade,
      useFactory: (openai: LlmAdapter, anthropic: LlmAdapter, responses: LlmAdapter, scripted: LlmAdapter) =>
        new LlmAdapterFacade({ openai, anthropic, responses, scripted }),
      inject: [OpenAiLlmAdapter, AnthropicLlmAdapter, ResponsesLlmAdapter, ScriptedLlmAdapter],
    },
    { provide: LLM_ADAPTER, useExisting: LlmAdapterFacade },
    {
      provide: LLM_MODEL_CONFIG,
      useFactory: ({ llm }: HarnessConfig): LlmModelConfig => ({
        protocol: llm.protocol,
        baseUrl: llm.baseUrl,
        apiKey: llm.apiKey,
        model: llm.model,
        headersTimeoutMs: llm.headersTimeoutMs,
        idleTimeoutMs: llm.idleTimeoutMs,
        maxAnswerChars: llm.maxAnswerChars,
      }),
      inject: [HARNESS_CONFIG],
    },
    { provide: LlmDangerClassifierModel, useFactory: (llm: LlmAdapter) => new LlmDangerClassifierModel(llm), inject: [LLM_ADAPTER] },
    { provide: DangerAssessor, useFactory: (model: LlmDangerClassifierModel) => new DangerAssessor(model), inject: [LlmDangerClassifierModel] },
    {
      provide: ToolDispatcher,
      useFactory: (
        config: HarnessConfig,
        registry: ToolRegistry,
        localExecutor: LocalToolExecutor,
        localSessions: LocalToolSessionRegistry,
        askUserQuestions: AskUserQuestionsRegistry,
        dangerAssessor: DangerAssessor,
        permissionLookup: PermissionLevelLookup,
        backgroundTasks: BackgroundTaskManager,
        attachments: AttachmentStore,
        approvals: ApprovalRequests,
        waits: WaitStore,
        resumedAnswers: ResumedAnswers,
      ) =>
        new ToolDispatcher({
          approvals,
          waits,
          resumedAnswers,
          askTimeoutMs: config.questionTimeoutMs,
          registry,
          localExecutor,
          localSessions,
          askUserQuestions,
          dangerAssessor,
          permissionLookup,
          backgroundTasks,
          callTimeoutMs: config.toolTimeoutMs,
          attachments,
          outputBudget: config.toolOutput,
        }),
      inject: [
        HARNESS_CONFIG,
        ToolRegistry,
        LocalToolExecutor,
        LocalToolSessionRegistry,
        AskUserQuestionsRegistry,
        DangerAssessor,
        PERMISSION_LEVEL_LOOKUP,
        BackgroundTaskManager,
        ATTACHMENT_STORE,
        ApprovalRequests,
        WAIT_STORE,
        ResumedAnswers,
      ],
    },
    {
      provide: AgentLoop,
      // Model and tool calls traced as OpenTelemetry spans (no-ops without an SDK; docs/observability.md).
      useFactory: (llm: LlmAdapter, dispatcher: ToolDispatcher, registry: ToolRegistry, backgroundTasks: BackgroundTaskManager) =>
        new AgentLoop({ llm: new TracedLlmAdapter(llm), dispatcher: new TracedToolDispatcher(dispatcher), registry, backgroundTasks }),
      inject: [LLM_ADAPTER, ToolDispatcher, ToolRegistry, BackgroundTaskManager],
    },
  ];
}

/**
 * The harness — tools and their registry, MCP clients, LOCAL execution, approvals, the
 * dispatcher, background tasks, the agent loop and the model adapters — as Nest providers, every
 * one exported, so that any of them can be injected or replaced (`overrideProvider(ToolDispatcher)`,
 * `overrideProvider(LLM_ADAPTER)`). Reads `HARNESS_CONFIG` and `HARNESS_EXTENSIONS` (global).
 */
@Module({})
export class HarnessModule {
  static forRoot(options: HarnessModuleOptions): DynamicModule {
    const providers = harnessProviders();
    return {
      module: HarnessModule,
      imports: options.imports,
      providers,
      exports: providers.map((provider) => (typeof provider === 'function' ? provider : provider.provide)),
    };
  }
}
