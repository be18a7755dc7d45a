import * as fs from 'node:fs';
import { Logger, Module, type BeforeApplicationShutdown, type DynamicModule, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { HARNESS_CONFIG, HarnessConfigModule, type HarnessExtensions } from './config/config.module';
import type { HarnessConfig } from './config/harness-config';
import { HarnessModule } from './harness/harness.module';
import { McpClientManager } from './harness/mcp/mcp-client-manager';
import { BackgroundTaskManager } from './harness/runtime/background-task-manager';
import { ShellIsolation } from './harness/tool/impl/shell-isolation';
import { closeGrepWorkers } from './harness/tool/impl/grep-worker';
import { canOpenBeneath } from './harness/tool/workspace-open';
import { HarnessDatabase } from './session/persistence/harness-database';
import { PersistenceModule } from './session/persistence/persistence.module';
import { RunRecovery } from './session/run/run-recovery';
import { RunService } from './session/run/run.service';
import { emptyWorkspaceTrash } from './session/service/session-workspace';
import { SessionModule } from './session/session.module';
import { StreamingWsModule } from './session/ws/streaming-ws.module';
import { StreamingWsRegistry } from './session/ws/streaming-ws-registry';

/** WebSocket close code for a server that is going away (RFC 6455). */
const WS_GOING_AWAY = 1001;
/** How long shutdown waits for runs to end, and then for sockets to flush, before moving on. */
const RUNS_GRACE_MS = 5000;
const SOCKETS_GRACE_MS = 2000;

/** What the lifecycle starts and stops. */
export interface HarnessLifecycleDeps {
  config: HarnessConfig;
  recovery: RunRecovery;
  shellIsolation: ShellIsolation;
  runs: RunService;
  wsRegistry: StreamingWsRegistry;
  mcp: McpClientManager | null;
  database: HarnessDatabase;
  /** Background jobs (`shell` with `async:true`): stopped with the server. */
  backgroundTasks?: BackgroundTaskManager | null;
}

/**
 * The server's side effects, in one place and in order (the providers themselves only build
 * objects; the database opens when it is built).
 *
 * At init, before the server listens: the workspace root is created; the runs a previous process
 * left unfinished are closed (one stderr line each), so no run can start before; where the cloud
 * shell is on, a missing `/proc/self/fd` is reported and the shell isolation is probed (awaited),
 * so a host without namespaces is reported now, not at the first command.
 *
 * Before Nest closes the HTTP and WebSocket servers: runs are stopped, each ending with a final
 * `error` event naming the shutdown, and background commands are killed; then every connection is
 * closed with 1001 once that event has left. After: MCP servers, then the database, last, whatever happened before.
 */
export class HarnessLifecycle implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('Shutdown');

  constructor(private readonly deps: HarnessLifecycleDeps) {}

  async onModuleInit(): Promise<void> {
    const { config, recovery, shellIsolation } = this.deps;
    fs.mkdirSync(config.workspaceRoot, { recursive: true });
    // What workspace deletions cut short by a stop left behind goes, without holding up the start.
    void emptyWorkspaceTrash(config.workspaceRoot).catch((error: unknown) => this.logger.warn(`emptying the workspace trash: ${String(error)}`));
    // Before anything can start a run: close the runs a previous process left unfinished, so their
    // sessions take messages again and their conversations answer every tool call.
    const recoveredRuns = recovery.recoverAll();
    for (const recovered of recoveredRuns) {
      process.stderr.write(
        recovered.waiting
          ? `run ${recovered.executionId} of session ${recovered.sessionId} waits for a person across the restart` +
              (recovered.ready ? ': its waits expired while the server was down, it goes on\n' : '\n')
          : `recovered run ${recovered.executionId} of session ${recovered.sessionId}, interrupted by a stop: ` +
              `${recovered.unansweredCalls.length} unfinished tool call(s) closed with an error\n`,
      );
    }
    // Waiting runs wait on (their waits expire on time); those whose waits all expired go on now.
    this.deps.runs.adoptWaitingRuns(
      recoveredRuns.filter((recovered) => recovered.waiting).map((recovered) => ({ ...recovered, ready: recovered.ready === true })),
    );
    if (!config.cloudShell) return;
    if (!canOpenBeneath()) {
      process.stderr.write(
        'warning: /proc/self/fd is missing: the file tools open workspace paths without pinning their directories, ' +
          'so a shell command running in the background could swap a directory for a link and lead them out of its workspace; mount /proc\n',
      );
    }
    await shellIsolation.check();
  }

  async beforeApplicationShutdown(): Promise<void> {
    const ended = await this.deps.runs
      .shutdown('the server is shutting down', RUNS_GRACE_MS)
      .catch((error: unknown) => this.logger.warn(`runs: ${String(error)}`));
    if (ended === false) this.logger.warn(`some runs had not ended ${RUNS_GRACE_MS} ms after they were stopped`);
    // A background command runs in a process group of its own: unstopped, it would outlive the server.
    const stopped = await this.deps.backgroundTasks?.stopAll('the server is shutting down', RUNS_GRACE_MS).catch((error: unknown) => {
      this.logger.warn(`background commands: ${String(error)}`);
      return 0;
    });
    if (stopped) this.logger.log(`stopped ${stopped} background command(s)`);
    await this.deps.wsRegistry
      .closeAll(WS_GOING_AWAY, 'server shutting down', SOCKETS_GRACE_MS)
      .catch((error: unknown) => this.logger.warn(`WebSocket connections: ${String(error)}`));
  }

  async onApplicationShutdown(): Promise<void> {
    try {
      await Promise.all([
        this.deps.mcp?.closeAll().catch((error: unknown) => this.logger.warn(`MCP: ${String(error)}`)),
        closeGrepWorkers().catch((error: unknown) => this.logger.warn(`grep threads: ${String(error)}`)),
      ]);
    } finally {
      this.deps.database.close();
    }
  }
}

/**
 * The whole server: `HarnessModule` (the agent and its tools) and `SessionModule` (HTTP, WebSocket,
 * persistence, runs), configured by `HarnessConfigModule`, started and stopped by
 * `HarnessLifecycle`. The session layer's `PersistenceModule` and `StreamingWsModule` supply the
 * harness's ports (`TASK_STORE`, `PERMISSION_LEVEL_LOOKUP`, `CLIENT_CONNECTIONS`), so that the
 * harness does not depend on the session layer.
 */
@Module({})
export class AppModule {
  static forRoot(config: HarnessConfig, extensions: HarnessExtensions = {}): DynamicModule {
    const harness = HarnessModule.forRoot({ imports: [PersistenceModule, StreamingWsModule] });
    const session = SessionModule.forRoot({ imports: [harness] });
    return {
      module: AppModule,
      imports: [HarnessConfigModule.forRoot(config, extensions), harness, session],
      providers: [
        {
          // One provider depends on everything it starts and stops, so the order is the one
          // written in it, not the order in which Nest visits modules.
          provide: HarnessLifecycle,
          useFactory: (
            config: HarnessConfig,
            recovery: RunRecovery,
            shellIsolation: ShellIsolation,
            runs: RunService,
            wsRegistry: StreamingWsRegistry,
            mcp: McpClientManager | null,
            database: HarnessDatabase,
            backgroundTasks: BackgroundTaskManager,
          ) => new HarnessLifecycle({ config, recovery, shellIsolation, runs, wsRegistry, mcp, database, backgroundTasks }),
          inject: [HARNESS_CONFIG, RunRecovery, ShellIsolation, RunService, StreamingWsRegistry, McpClientManager, HarnessDatabase, BackgroundTaskManager],
        },
      ],
    };
  }
}
