import { Logger, Module, type BeforeApplicationShutdown, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, Reflector } from '@nestjs/core';
import { createHarnessComponents, type HarnessComponents, type HarnessExtensions } from './harness-components';
import type { HarnessConfig } from './config/harness-config';
import { LocalToolSessionRegistry } from './harness/local/local-tool-session-registry';
import { AskUserQuestionsRegistry } from './harness/tool/ask-user-questions-registry';
import { TokenAuthenticator } from './session/auth/token-authenticator';
import { BearerAuthGuard } from './session/http/auth.guard';
import { HarnessExceptionFilter } from './session/http/harness-exception.filter';
import { HealthController } from './session/http/health.controller';
import { SessionsController } from './session/http/sessions.controller';
import { ToolsController } from './session/http/tools.controller';
import { RunService } from './session/run/run.service';
import { SessionService } from './session/session-service';
import { ToolCatalog } from './session/tool-catalog';
import { StreamingGateway } from './session/ws/streaming.gateway';
import { StreamingWsRegistry } from './session/ws/streaming-ws-registry';

const COMPONENTS = Symbol('HarnessComponents');

/** WebSocket close code for a server that is going away (RFC 6455). */
const WS_GOING_AWAY = 1001;
/** How long shutdown waits for runs to end, and then for sockets to flush, before moving on. */
const RUNS_GRACE_MS = 5000;
const SOCKETS_GRACE_MS = 2000;

/**
 * Closes what the process opened, in order. Before Nest closes the HTTP and WebSocket servers:
 * runs are stopped, each ending with a final `error` event naming the shutdown, and every
 * connection is closed with 1001 once that event has left. After: MCP servers, then the database.
 */
class HarnessShutdown implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Shutdown');
  constructor(private readonly components: HarnessComponents) {}

  async beforeApplicationShutdown(): Promise<void> {
    const ended = await this.components.runs
      .shutdown('the server is shutting down', RUNS_GRACE_MS)
      .catch((error: unknown) => this.logger.warn(`runs: ${String(error)}`));
    if (ended === false) this.logger.warn(`some runs had not ended ${RUNS_GRACE_MS} ms after they were stopped`);
    await this.components.wsRegistry
      .closeAll(WS_GOING_AWAY, 'server shutting down', SOCKETS_GRACE_MS)
      .catch((error: unknown) => this.logger.warn(`WebSocket connections: ${String(error)}`));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.components.mcp?.closeAll().catch((error: unknown) => this.logger.warn(`MCP: ${String(error)}`));
    this.components.database.close();
  }
}

/** Wires the harness classes (plain TypeScript) into Nest: HTTP controllers, the gateway, the guard. */
@Module({})
export class AppModule {
  static forRoot(config: HarnessConfig, extensions: HarnessExtensions = {}): DynamicModule {
    const from = <T>(pick: (components: HarnessComponents) => T) => ({ useFactory: pick, inject: [COMPONENTS] });
    return {
      module: AppModule,
      controllers: [HealthController, SessionsController, ToolsController],
      providers: [
        { provide: COMPONENTS, useFactory: () => createHarnessComponents(config, extensions) },
        { provide: TokenAuthenticator, ...from((c) => c.authenticator) },
        { provide: SessionService, ...from((c) => c.sessions) },
        { provide: RunService, ...from((c) => c.runs) },
        { provide: ToolCatalog, ...from((c) => c.toolCatalog) },
        { provide: StreamingWsRegistry, ...from((c) => c.wsRegistry) },
        { provide: LocalToolSessionRegistry, ...from((c) => c.localSessions) },
        { provide: AskUserQuestionsRegistry, ...from((c) => c.askUserQuestions) },
        { provide: HarnessShutdown, ...from((c) => new HarnessShutdown(c)) },
        {
          provide: APP_GUARD,
          useFactory: (authenticator: TokenAuthenticator, reflector: Reflector) => new BearerAuthGuard(authenticator, reflector),
          inject: [TokenAuthenticator, Reflector],
        },
        { provide: APP_FILTER, useClass: HarnessExceptionFilter },
        StreamingGateway,
      ],
    };
  }
}
