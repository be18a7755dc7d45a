import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadHarnessConfig } from '../../src/config/harness-config';
import type { Tool } from '../../src/harness/tool/tool';
import { startHarness, type RunningHarness } from '../../src/main';
import { FakeOpenAiProvider } from './fake-openai-provider';
import { FakeProvider, type WireFormat } from './fake-provider';
import { HttpClient } from './http-client';
import { WsTestClient } from './ws-test-client';

/** User 1's token. */
export const TOKEN_A = 'tok-a';
/** User 2's token. */
export const TOKEN_B = 'tok-b';

/** The compiled example MCP server (`npm run build:dev` builds it; `npm test` runs that first). */
export const MCP_DEMO_SERVER = path.resolve(__dirname, '../../build/dev/demo/mcp-demo-server.js');

export interface TestHarnessOptions {
  /** Configure the example MCP server as server 1, `demo`, over stdio. */
  mcpDemo?: boolean;
  /** More entries for the MCP config file (after `demo`). */
  extraMcpServers?: Array<Record<string, unknown>>;
  /** Extra environment variables, applied last. */
  env?: Record<string, string>;
  /** Tools registered beside the built-in ones (as an embedding product would). */
  tools?: Tool[];
  /**
   * Talk to a {@link FakeProvider} of this wire format, with `LLM_PROTOCOL` set to match, instead
   * of the default {@link FakeOpenAiProvider} over `openai`.
   */
  provider?: WireFormat;
  /** Where the server finds the built web console (default: beside `src/main.ts`, where there is none). */
  consoleDir?: string;
}

/** What the harness needs of a fake model server. */
interface FakeModelServer {
  url: string;
  close(): Promise<void>;
}

/** A whole server on a free port, with its fake model, throw-away database and workspace. */
export interface TestHarness<Provider = FakeOpenAiProvider> {
  harness: RunningHarness;
  url: string;
  provider: Provider;
  workspaceRoot: string;
  /** HTTP as user 1, user 2, and without a token. */
  userA: HttpClient;
  userB: HttpClient;
  anonymous: HttpClient;
  /** Opens a WebSocket; it is closed by `close()`. */
  connect(token?: string | null): Promise<WsTestClient>;
  /** Closes the clients, the server, the fake model, and removes the temp folder. */
  close(): Promise<void>;
}

/** Starts the server the way `main` does, configured from environment strings. */
export function startTestHarness(options?: TestHarnessOptions & { provider?: undefined }): Promise<TestHarness>;
export function startTestHarness(options: TestHarnessOptions & { provider: WireFormat }): Promise<TestHarness<FakeProvider>>;
export async function startTestHarness(options: TestHarnessOptions = {}): Promise<TestHarness<FakeModelServer>> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-e2e-'));
  const provider: FakeModelServer = options.provider ? await FakeProvider.start(options.provider) : await FakeOpenAiProvider.start();
  const env: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: '0',
    HARNESS_DB: ':memory:',
    HARNESS_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
    HARNESS_TOKENS: `${TOKEN_A}=1,${TOKEN_B}=2`,
    LLM_PROTOCOL: options.provider ?? 'openai',
    LLM_BASE_URL: provider.url,
    LLM_API_KEY: 'sk-fake',
    LLM_MODEL: 'fake-model',
  };
  const servers = [
    ...(options.mcpDemo ? [{ id: 1, name: 'demo', type: 'stdio', command: process.execPath, args: [MCP_DEMO_SERVER], env: {} }] : []),
    ...(options.extraMcpServers ?? []),
  ];
  if (servers.length > 0) {
    const mcpConfig = path.join(scratch, 'mcp.json');
    fs.writeFileSync(mcpConfig, JSON.stringify({ servers }));
    env.HARNESS_MCP_CONFIG = mcpConfig;
  }
  Object.assign(env, options.env);
  let harness: RunningHarness;
  try {
    harness = await startHarness(loadHarnessConfig(env), { logger: false, tools: options.tools, consoleDir: options.consoleDir });
  } catch (error) {
    await provider.close();
    fs.rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
  const clients: WsTestClient[] = [];
  return {
    harness,
    url: harness.url,
    provider,
    workspaceRoot: env.HARNESS_WORKSPACE_ROOT,
    userA: new HttpClient(harness.url, TOKEN_A),
    userB: new HttpClient(harness.url, TOKEN_B),
    anonymous: new HttpClient(harness.url, null),
    async connect(token: string | null = TOKEN_A) {
      const client = await WsTestClient.connect(harness.url, token);
      clients.push(client);
      return client;
    },
    async close() {
      await Promise.all(clients.map((client) => client.close()));
      // The provider first: a run still waiting on a gated round sees its stream end and finishes.
      await provider.close();
      await harness.close();
      fs.rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/** Polls `condition` until it holds; for server state no event announces. */
export async function waitUntil(condition: () => boolean, description: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${description}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 5));
  }
}

/** The stored session as the HTTP API returns it. */
export interface SessionView {
  id: number;
  userId: number;
  executionMode: 'CLOUD' | 'LOCAL';
  permissionLevel: string;
  tools: string[] | null;
  workspace: string;
  createdAt: string;
}

/** Creates a session as the client's user; fails the test on anything but 201. */
export async function createSession(client: HttpClient, body: Record<string, unknown>): Promise<SessionView> {
  const answer = await client.post<SessionView>('/api/sessions', body);
  if (answer.status !== 201) throw new Error(`POST /api/sessions: ${answer.status} ${answer.text}`);
  return answer.body;
}

/** Posts a message and returns the run's execution id; fails the test on anything but 202. */
export async function startRun(client: HttpClient, sessionId: number, content: string): Promise<string> {
  const answer = await client.post<{ executionId: string }>(`/api/sessions/${sessionId}/messages`, { content });
  if (answer.status !== 202) throw new Error(`POST /api/sessions/${sessionId}/messages: ${answer.status} ${answer.text}`);
  return answer.body.executionId;
}

/** Whether a process with this id is still running. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
