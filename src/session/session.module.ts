import { Logger, Module, type DynamicModule, type ModuleMetadata } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, Reflector } from '@nestjs/core';
import { HARNESS_CONFIG } from '../config/config.module';
import type { HarnessConfig } from '../config/harness-config';
import { AgentLoop } from '../harness/core/agent-loop';
import { LLM_MODEL_CONFIG, MCP_SERVERS } from '../harness/harness.module';
import type { LlmModelConfig } from '../harness/llm/chat-request';
import { LocalToolSessionRegistry } from '../harness/local/local-tool-session-registry';
import { McpClientManager } from '../harness/mcp/mcp-client-manager';
import type { McpServerConfig } from '../harness/mcp/mcp-server-config';
import { BackgroundTaskManager } from '../harness/runtime/background-task-manager';
import { AskUserQuestionsRegistry } from '../harness/tool/ask-user-questions-registry';
import { ResumedAnswers } from '../harness/tool/resumed-answers';
import { ToolRegistry } from '../harness/tool/tool-registry';
import { TokenAuthenticator } from './auth/token-authenticator';
import { AttachmentsController } from './http/attachments.controller';
import { BearerAuthGuard } from './http/auth.guard';
import { HarnessExceptionFilter } from './http/harness-exception.filter';
import { HealthController } from './http/health.controller';
import { SessionEventsController } from './http/session-events.controller';
import { SessionsController } from './http/sessions.controller';
import { ToolsController } from './http/tools.controller';
import { ActivityRepository } from './persistence/activity-repository';
import { HarnessDatabase } from './persistence/harness-database';
import { MessageRepository } from './persistence/message-repository';
import { PersistenceModule } from './persistence/persistence.module';
import { RunRepository } from './persistence/run-repository';
import { SessionRepository } from './persistence/session-repository';
import { WaitRepository } from './persistence/wait-repository';
import { RunRecovery } from './run/run-recovery';
import { RunService } from './run/run.service';
import { collectGarbage } from '../harness/runtime/idle-memory';
import { SessionDeleter } from './service/session-deleter';
import { SessionToolProvider } from './service/session-tool-provider';
import { SessionService } from './service/session-service';
import { ToolCatalog } from './service/tool-catalog';
import { StreamingGateway } from './gateway/streaming.gateway';
import { StreamingWsModule } from './ws/streaming-ws.module';
import { StreamingWsRegistry } from './ws/streaming-ws-registry';

/** How long the server is without a run before it gives back the memory a burst of runs took. */
const IDLE_RECLAIM_MS = 1_000;

/**
 * Collects the main thread's garbage and empties the database connection's page cache. The pooled
 * grep threads stay: they stop on their own after `GREP_THREAD_IDLE_MS` without a search.
 */
function reclaimIdleMemory(database: HarnessDatabase): void {
  collectGarbage();
  database.releaseMemory();
}

/** What `SessionModule.forRoot` needs from its host. */
export interface SessionModuleOptions {
  /** The module that exports the harness's providers (`HarnessModule.forRoot(...)`). */
  imports: NonNullable<ModuleMetadata['imports']>;
}

/**
 * What users reach: the HTTP controllers (with the bearer guard and the exception filter, both
 * global), the WebSocket gateway, sessions, runs and their start-up recovery, the tool catalog;
 * with persistence (`PersistenceModule`) and the open connections (`StreamingWsModule`), both
 * re-exported. Runs use the harness's agent loop.
 */
@Module({})
export class SessionModule {
  static forRoot(options: SessionModuleOptions): DynamicModule {
    return {
      module: SessionModule,
      imports: [PersistenceModule, StreamingWsModule, ...options.imports],
      controllers: [HealthController, SessionsController, SessionEventsController, AttachmentsController, ToolsController],
      providers: [
        { provide: TokenAuthenticator, useFactory: (config: HarnessConfig) => new TokenAuthenticator(config.tokens), inject: [HARNESS_CONFIG] },
        { provide: SessionToolProvider, useFactory: (mcp: McpClientManager | null) => new SessionToolProvider(mcp), inject: [McpClientManager] },
        {
          provide: SessionService,
          useFactory: (
            config: HarnessConfig,
            sessions: SessionRepository,
            messages: MessageRepository,
            activities: ActivityRepository,
            registry: ToolRegistry,
            mcpServers: McpServerConfig[],
          ) =>
            new SessionService({ sessions, messages, activities, workspaceRoot: config.workspaceRoot, builtinToolNames: () => registry.names(), mcpServers }),
          inject: [HARNESS_CONFIG, SessionRepository, MessageRepository, ActivityRepository, ToolRegistry, MCP_SERVERS],
        },
        {
          provide: RunRecovery,
          useFactory: (database: HarnessDatabase, runs: RunRepository, messages: MessageRepository, activities: ActivityRepository, waits: WaitRepository) =>
            new RunRecovery({ database, runs, messages, activities, waits }),
          inject: [HarnessDatabase, RunRepository, MessageRepository, ActivityRepository, WaitRepository],
        },
        {
          provide: RunService,
          useFactory: (
            agentLoop: AgentLoop,
            sessions: SessionService,
            messages: MessageRepository,
            activities: ActivityRepository,
            runs: RunRepository,
            database: HarnessDatabase,
            wsRegistry: StreamingWsRegistry,
            localSessions: LocalToolSessionRegistry,
            askUserQuestions: AskUserQuestionsRegistry,
            sessionTools: SessionToolProvider,
            modelConfig: LlmModelConfig,
            waits: WaitRepository,
            resumedAnswers: ResumedAnswers,
          ) =>
            new RunService({
              agentLoop,
              sessions,
              messages,
              activities,
              runs,
              database,
              wsRegistry,
              localSessions,
              askUserQuestions,
              sessionTools,
              modelConfig,
              waits,
              resumedAnswers,
              logger: new Logger('RunService'),
              // A second without runs: the garbage of the burst and the page cache go.
              idle: { afterMs: IDLE_RECLAIM_MS, reclaim: () => reclaimIdleMemory(database) },
            }),
          inject: [
            AgentLoop,
            SessionService,
            MessageRepository,
            ActivityRepository,
            RunRepository,
            HarnessDatabase,
            StreamingWsRegistry,
            LocalToolSessionRegistry,
            AskUserQuestionsRegistry,
            SessionToolProvider,
            LLM_MODEL_CONFIG,
            WaitRepository,
            ResumedAnswers,
          ],
        },
        {
          provide: SessionDeleter,
          useFactory: (
            config: HarnessConfig,
            sessions: SessionService,
            repository: SessionRepository,
            runs: RunService,
            backgroundTasks: BackgroundTaskManager,
            sessionTools: SessionToolProvider,
          ) => new SessionDeleter({ sessions, repository, runs, backgroundTasks, sessionTools, workspaceRoot: config.workspaceRoot, logger: new Logger('SessionDeleter') }),
          inject: [HARNESS_CONFIG, SessionService, SessionRepository, RunService, BackgroundTaskManager, SessionToolProvider],
        },
        {
          provide: ToolCatalog,
          useFactory: (registry: ToolRegistry, sessionTools: SessionToolProvider) => new ToolCatalog(registry, sessionTools),
          inject: [ToolRegistry, SessionToolProvider],
        },
        StreamingGateway,
        {
          provide: APP_GUARD,
          useFactory: (authenticator: TokenAuthenticator, reflector: Reflector) => new BearerAuthGuard(authenticator, reflector),
          inject: [TokenAuthenticator, Reflector],
        },
        { provide: APP_FILTER, useClass: HarnessExceptionFilter },
      ],
      exports: [PersistenceModule, StreamingWsModule, TokenAuthenticator, SessionToolProvider, SessionService, RunRecovery, RunService, ToolCatalog],
    };
  }
}
