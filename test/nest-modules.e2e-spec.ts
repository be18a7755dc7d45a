import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test, type TestingModule, type TestingModuleBuilder } from '@nestjs/testing';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AppModule } from '../src/app.module';
import type { HarnessExtensions } from '../src/config/config.module';
import { loadHarnessConfig, type HarnessConfig } from '../src/config/harness-config';
import { LLM_ADAPTER, PERMISSION_LEVEL_LOOKUP } from '../src/harness/harness.module';
import type { ChatRequest, ChatResponse, StreamChunk } from '../src/harness/llm/chat-request';
import type { LlmAdapter } from '../src/harness/llm/llm-adapter';
import { McpClientManager } from '../src/harness/mcp/mcp-client-manager';
import { BaseTool } from '../src/harness/tool/tool';
import { ToolDispatcher, type PermissionLevelLookup } from '../src/harness/tool/tool-dispatcher';
import type { ToolInvocation } from '../src/harness/tool/tool-invocation';
import type { ToolResult } from '../src/harness/tool/tool-result';
import { ToolRegistry } from '../src/harness/tool/tool-registry';
import { configureHarnessApp, harnessAppOptions, listenHarness, type RunningHarness } from '../src/main';
import { HarnessDatabase } from '../src/session/persistence/harness-database';
import { RunRepository } from '../src/session/persistence/run-repository';
import { SessionRepository } from '../src/session/persistence/session-repository';
import { RunService } from '../src/session/run/run.service';
import { StreamingWsRegistry } from '../src/session/ws/streaming-ws-registry';
import { HttpClient } from './support/http-client';
import { createSession, startRun } from './support/test-harness';
import { WsTestClient } from './support/ws-test-client';

const TOKEN = 'nest-token';

/** A model that answers each request with the next scripted round and keeps what it was asked. */
class RecordingModel implements LlmAdapter {
  readonly requests: ChatRequest[] = [];

  constructor(private readonly rounds: StreamChunk[][]) {}

  chat(): Promise<ChatResponse> {
    return Promise.reject(new Error('the runs stream'));
  }

  async *stream(request: ChatRequest): AsyncIterable<StreamChunk> {
    this.requests.push(structuredClone(request));
    const round = this.rounds[this.requests.length - 1];
    if (!round) throw new Error(`no round scripted for request ${this.requests.length}`);
    yield* round;
  }
}

/** The real dispatcher, keeping every invocation it is handed. */
class RecordingToolDispatcher extends ToolDispatcher {
  readonly invocations: ToolInvocation[] = [];

  override dispatchInvocation(invocation: ToolInvocation): Promise<ToolResult> {
    this.invocations.push(invocation);
    return super.dispatchInvocation(invocation);
  }
}

/** A product tool, registered through the embedding extensions. */
class ForecastTool extends BaseTool {
  getName(): string {
    return 'forecast';
  }
  getDescription(): string {
    return "Tomorrow's weather for a city.";
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
  }
  protected override executeImpl(argumentsJson: string): string {
    const { city } = JSON.parse(argumentsJson) as { city: string };
    return JSON.stringify({ city, forecast: 'sunny' });
  }
}

describe('the Nest modules', () => {
  let scratch: string;
  let moduleRef: TestingModule | null = null;
  let harness: RunningHarness | null = null;
  const clients: WsTestClient[] = [];

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-nest-'));
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    if (harness) await harness.close();
    else await moduleRef?.close();
    harness = null;
    moduleRef = null;
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  /** A configuration whose real model is unreachable: only an overriding adapter can answer. */
  function configFor(env: Record<string, string> = {}): HarnessConfig {
    return loadHarnessConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      HARNESS_DB: ':memory:',
      HARNESS_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
      HARNESS_TOKENS: `${TOKEN}=1`,
      LLM_PROTOCOL: 'openai',
      LLM_BASE_URL: 'http://127.0.0.1:9',
      LLM_API_KEY: 'sk-unused',
      LLM_MODEL: 'unused-model',
      ...env,
    });
  }

  /** `AppModule.forRoot(config)` in a testing module, with what `override` changes, listening as `startHarness` does. */
  async function listen(
    config: HarnessConfig,
    extensions: HarnessExtensions,
    override: (builder: TestingModuleBuilder) => TestingModuleBuilder = (builder) => builder,
  ): Promise<{ api: HttpClient; url: string }> {
    moduleRef = await override(Test.createTestingModule({ imports: [AppModule.forRoot(config, extensions)] })).compile();
    const app = moduleRef.createNestApplication<NestExpressApplication>(harnessAppOptions({ logger: false }));
    harness = await listenHarness(configureHarnessApp(app), config);
    return { api: new HttpClient(harness.url, TOKEN), url: harness.url };
  }

  async function connect(url: string): Promise<WsTestClient> {
    const client = await WsTestClient.connect(url, TOKEN);
    clients.push(client);
    return client;
  }

  describe('when the model adapter and the tool dispatcher are overridden', () => {
    it('runs over HTTP and WebSocket through the replacements', async () => {
      const model = new RecordingModel([
        [
          { toolCallDeltas: [{ index: 0, id: 'call_forecast', type: 'function', function: { name: 'forecast', arguments: '{"city":"Oslo"}' } }] },
          { finishReason: 'tool_calls' },
        ],
        [{ contentDelta: 'Sunny in Oslo tomorrow.' }, { finishReason: 'stop' }],
      ]);
      let dispatcher: RecordingToolDispatcher | null = null;
      const { api, url } = await listen(configFor(), { tools: [new ForecastTool()] }, (builder) =>
        builder
          .overrideProvider(LLM_ADAPTER)
          .useValue(model)
          .overrideProvider(ToolDispatcher)
          .useFactory({
            factory: (registry: ToolRegistry, permissionLookup: PermissionLevelLookup) =>
              (dispatcher = new RecordingToolDispatcher({ registry, permissionLookup })),
            inject: [ToolRegistry, PERMISSION_LEVEL_LOOKUP],
          }),
      );
      const session = await createSession(api, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      const client = await connect(url);

      const executionId = await startRun(api, session.id, 'Will it rain in Oslo?');
      await client.waitForRunEvent('message_end', executionId);

      expect(dispatcher!.invocations.map(({ callId, toolName, argumentsJson, sessionId }) => ({ callId, toolName, argumentsJson, sessionId }))).toEqual([
        { callId: 'call_forecast', toolName: 'forecast', argumentsJson: '{"city":"Oslo"}', sessionId: session.id },
      ]);
      const result = client.runEvents(executionId).find((event) => event.type === 'tool_call_result');
      expect(result?.data).toEqual(expect.objectContaining({ tool_call_id: 'call_forecast', status: 'success', result: '{"city":"Oslo","forecast":"sunny"}' }));
      expect(model.requests).toHaveLength(2);
      expect(model.requests[0].messages.at(-1)).toEqual(expect.objectContaining({ role: 'user', content: 'Will it rain in Oslo?' }));
      expect(model.requests[1].messages.at(-1)).toEqual(
        expect.objectContaining({ role: 'tool', tool_call_id: 'call_forecast', content: '{"city":"Oslo","forecast":"sunny"}' }),
      );
      const stored = await api.get<Array<{ role: string; content: string | null }>>(`/api/sessions/${session.id}/messages`);
      expect(stored.body.at(-1)).toEqual(expect.objectContaining({ role: 'assistant', content: 'Sunny in Oslo tomorrow.' }));
    });
  });

  describe('when it starts', () => {
    it('closes, before it listens, the runs a previous process left unfinished', async () => {
      const dbPath = path.join(scratch, 'harness.db');
      const previous = new HarnessDatabase(dbPath);
      const left = new SessionRepository(previous).create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'default' });
      new RunRepository(previous).start('run-left-behind', left.id);
      previous.close();
      const written: string[] = [];
      const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
        written.push(String(chunk));
        return true;
      });

      try {
        await listen(configFor({ HARNESS_DB: dbPath }), {});
        expect(written.join('')).toContain(`recovered run run-left-behind of session ${left.id}, interrupted by a stop`);
        expect(moduleRef!.get(RunRepository).find('run-left-behind')?.status).toBe('interrupted');
        expect(fs.statSync(path.join(scratch, 'workspaces')).isDirectory()).toBe(true);
      } finally {
        stderr.mockRestore();
      }
    });
  });

  describe('when it closes', () => {
    it('stops the runs, then closes the sockets with 1001, then MCP, and the database last', async () => {
      const order: string[] = [];
      let database: HarnessDatabase | null = null;
      const { url } = await listen(configFor(), {}, (builder) =>
        builder.overrideProvider(McpClientManager).useValue({
          closeAll: async () => {
            order.push(`mcp (database open: ${String(database?.open)})`);
          },
        }),
      );
      const opened = moduleRef!.get(HarnessDatabase);
      database = opened;
      const runs = moduleRef!.get(RunService);
      const sockets = moduleRef!.get(StreamingWsRegistry);
      const stopRuns = runs.shutdown.bind(runs);
      jest.spyOn(runs, 'shutdown').mockImplementation((...args) => (order.push('runs'), stopRuns(...args)));
      const closeSockets = sockets.closeAll.bind(sockets);
      jest.spyOn(sockets, 'closeAll').mockImplementation((...args) => (order.push('sockets'), closeSockets(...args)));
      const closeDatabase = opened.close.bind(opened);
      jest.spyOn(opened, 'close').mockImplementation(() => (order.push('database'), closeDatabase()));
      const client = await connect(url);

      await harness!.close();
      harness = null;

      expect(order).toEqual(['runs', 'sockets', 'mcp (database open: true)', 'database']);
      expect((await client.closed).code).toBe(1001);
      expect(opened.open).toBe(false);
    });
  });
});
