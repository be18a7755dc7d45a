import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { SlowServerEvent } from '../src/demo/mcp-slow-server';
import { McpClientManager } from '../src/harness/mcp/mcp-client-manager';
import type { McpServerConfig } from '../src/harness/mcp/mcp-server-config';
import { McpToolAdapter } from '../src/harness/mcp/mcp-tool-adapter';
import { asToolOutput, outputText } from '../src/harness/mcp/testing/tool-output-text';
import { ToolCallContext, type ToolCallProgress } from '../src/harness/tool/tool-call-context';
import type { ToolOutput } from '../src/harness/tool/tool-output';
import {
  readSlowServerRecord,
  requireBuiltSlowMcpServer,
  SLOW_MCP_SERVER,
  startSlowMcpHttpServer,
  type SlowMcpHttpProcess,
} from './support/slow-mcp-server';

/**
 * MCP calls driven the way the dispatcher runs them: `McpToolAdapter.execute` inside
 * `ToolCallContext.runScope({callId, signal, onProgress})`, against the slow MCP server as a real
 * process (stdio and Streamable HTTP), which records what it saw.
 */

const USER = 1;
const WORKSPACE = '/tmp/workspace';
/** The servers' own timeouts (from their config entries), shorter than the manager's default. */
const CALL_TIMEOUT_MS = 1_000;
const MAX_TOTAL_TIMEOUT_MS = 1_500;
const MANAGER_CALL_TIMEOUT_MS = 30_000;

let scratch: string;
let nextLabel = 0;

beforeAll(() => {
  requireBuiltSlowMcpServer();
  scratch = mkdtempSync(path.join(tmpdir(), 'mcp-cancellation-'));
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function newRecordFile(): string {
  return path.join(scratch, `record-${process.pid}-${nextLabel++}.jsonl`);
}

function uniqueLabel(): string {
  return `call-${nextLabel++}`;
}

/** One `work` or `pid` tool of a configured server, as the session's tools offer it. */
function tool(manager: McpClientManager, serverId: number, toolName: 'work' | 'pid'): McpToolAdapter {
  const server = manager.getServer(serverId)!;
  return new McpToolAdapter({ serverId, serverName: server.name, toolName, description: '', inputSchema: { type: 'object' } }, manager);
}

/** Runs the call as the dispatcher does: inside the call's scope, with its signal and progress sink. */
function runCall(
  adapter: McpToolAdapter,
  sessionId: number,
  args: Record<string, unknown>,
  scope: { signal?: AbortSignal; onProgress?: (progress: ToolCallProgress) => void } = {},
): Promise<ToolOutput> {
  return ToolCallContext.runScope({ callId: `call_${nextLabel++}`, ...scope }, async () =>
    asToolOutput(await adapter.execute(JSON.stringify(args), sessionId, USER, WORKSPACE)),
  );
}

/**
 * A call that got no result: an `isError` output whose text is the JSON error object the model
 * has always read, and whose `errorMessage` is its message. Returns the object.
 */
function failure(output: ToolOutput): { error: string } {
  expect(output.isError).toBe(true);
  const answer = JSON.parse(outputText(output)) as { error: string };
  expect(output.errorMessage).toBe(answer.error);
  return answer;
}

async function waitFor<T>(find: () => T | undefined, description: string, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${description}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 10));
  }
}

function recorded(recordFile: string, event: SlowServerEvent['event'], match: (event: SlowServerEvent) => boolean): SlowServerEvent | undefined {
  return readSlowServerRecord(recordFile).find((entry) => entry.event === event && match(entry));
}

/** Waits until the server started the call labelled `label`, and returns its `started` event. */
function started(recordFile: string, label: string): Promise<SlowServerEvent> {
  return waitFor(() => recorded(recordFile, 'started', (event) => event.label === label), `the server to start ${label}`);
}

interface TransportCase {
  name: string;
  /** Starts what the servers need and returns their config entries (ids 1 and 2). */
  setUp(recordFile: string): Promise<McpServerConfig[]>;
  tearDown(): Promise<void>;
}

function stdioCase(): TransportCase {
  const entry = (id: number, name: string, recordFile: string): McpServerConfig => ({
    id,
    name,
    type: 'stdio',
    command: process.execPath,
    args: [SLOW_MCP_SERVER, '--record', recordFile],
    env: {},
  });
  return {
    name: 'stdio',
    setUp: async (recordFile) => [
      { ...entry(1, 'slow', recordFile), callTimeoutMs: CALL_TIMEOUT_MS },
      { ...entry(2, 'capped', recordFile), callTimeoutMs: CALL_TIMEOUT_MS, maxTotalTimeoutMs: MAX_TOTAL_TIMEOUT_MS },
    ],
    tearDown: async () => undefined,
  };
}

function httpCase(): TransportCase {
  let server: SlowMcpHttpProcess | undefined;
  return {
    name: 'Streamable HTTP',
    setUp: async (recordFile) => {
      server = await startSlowMcpHttpServer(recordFile);
      return [
        { id: 1, name: 'slow', type: 'http', url: server.url, callTimeoutMs: CALL_TIMEOUT_MS },
        { id: 2, name: 'capped', type: 'http', url: server.url, callTimeoutMs: CALL_TIMEOUT_MS, maxTotalTimeoutMs: MAX_TOTAL_TIMEOUT_MS },
      ];
    },
    tearDown: async () => server?.stop(),
  };
}

describe.each([stdioCase(), httpCase()])('an MCP tool call over $name', (transport) => {
  const SESSION = 1;
  let recordFile: string;
  let manager: McpClientManager;
  let work: McpToolAdapter;

  beforeAll(async () => {
    recordFile = newRecordFile();
    manager = new McpClientManager(await transport.setUp(recordFile), { callTimeoutMs: MANAGER_CALL_TIMEOUT_MS, connectTimeoutMs: 10_000 });
    work = tool(manager, 1, 'work');
    // Connect first, so that the durations below are those of the calls alone.
    expect(outputText(await runCall(tool(manager, 1, 'pid'), SESSION, {}))).toMatch(/^\d+$/);
    expect(outputText(await runCall(tool(manager, 2, 'pid'), SESSION, {}))).toMatch(/^\d+$/);
  });

  afterAll(async () => {
    await manager.closeAll();
    await transport.tearDown();
  });

  describe('when the call is cancelled mid-way', () => {
    it('answers within 500 ms with a cancelled error, and the server is told within 500 ms to stop that request', async () => {
      const label = uniqueLabel();
      const controller = new AbortController();
      const call = runCall(work, SESSION, { ms: 10_000, label }, { signal: controller.signal });
      const { requestId } = await started(recordFile, label);

      const abortedAt = Date.now();
      controller.abort();
      const answer = await call;
      const answeredAt = Date.now();

      expect(answeredAt - abortedAt).toBeLessThan(500);
      expect(failure(answer)).toEqual({ error: "MCP tool call cancelled before 'work' on MCP server 'slow' answered" });
      const cancelled = await waitFor(
        () => recorded(recordFile, 'cancelled', (event) => event.requestId === requestId),
        'notifications/cancelled for the request',
      );
      expect(cancelled.at - abortedAt).toBeLessThan(500);
      // The server's handler saw its signal fire and stopped working.
      await waitFor(() => recorded(recordFile, 'aborted', (event) => event.label === label), 'the tool to stop');
      expect(recorded(recordFile, 'finished', (event) => event.label === label)).toBeUndefined();
    });

    it('keeps the connection for the next call', async () => {
      expect(outputText(await runCall(work, SESSION, { ms: 10 }))).toBe('worked 10 ms');
    });
  });

  describe('when the run is cancelled before the call starts', () => {
    it('answers with a cancelled error without calling the server', async () => {
      const label = uniqueLabel();
      const answer = await runCall(work, SESSION, { ms: 10, label }, { signal: AbortSignal.abort(new Error('the user stopped the run')) });

      expect(failure(answer)).toEqual({
        error: "MCP tool call cancelled before 'work' on MCP server 'slow' answered (the user stopped the run)",
      });
      await new Promise<void>((resolve) => setTimeout(resolve, 100));
      expect(recorded(recordFile, 'started', (event) => event.label === label)).toBeUndefined();
    });
  });

  describe('when the server reports progress', () => {
    it('keeps a call alive past its call timeout and hands each report to the tool call', async () => {
      const reports: ToolCallProgress[] = [];
      const startedAt = Date.now();

      const answer = await runCall(work, SESSION, { ms: 3 * CALL_TIMEOUT_MS, progressEveryMs: 200 }, { onProgress: (report) => reports.push(report) });

      expect(outputText(answer)).toBe('worked 3000 ms');
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(3 * CALL_TIMEOUT_MS);
      expect(reports.length).toBeGreaterThanOrEqual(10);
      expect(reports[0]).toEqual({ progress: expect.any(Number), total: 3000, message: expect.stringMatching(/^worked \d+ of 3000 ms$/) });
      const values = reports.map((report) => report.progress);
      expect(values).toEqual([...values].sort((a, b) => a - b));
    });

    it('still ends the call at the maximum total time', async () => {
      const label = uniqueLabel();
      const startedAt = Date.now();

      const answer = await runCall(tool(manager, 2, 'work'), SESSION, { ms: 10_000, progressEveryMs: 200, label });
      const elapsed = Date.now() - startedAt;

      expect(failure(answer)).toEqual({
        error: `MCP tool call failed: 'work' on MCP server 'capped' did not finish within its maximum of ${MAX_TOTAL_TIMEOUT_MS} ms`,
      });
      expect(elapsed).toBeGreaterThanOrEqual(MAX_TOTAL_TIMEOUT_MS - 50);
      expect(elapsed).toBeLessThan(MAX_TOTAL_TIMEOUT_MS + 500);
      await waitFor(() => recorded(recordFile, 'aborted', (event) => event.label === label), 'the server to stop the capped call');
    });

    it("gives each of two concurrent calls only its own reports, though they share the session's connection", async () => {
      // A session of its own: its connection is opened inside the first call's scope.
      const session = 2;
      const first: ToolCallProgress[] = [];
      const second: ToolCallProgress[] = [];

      const answers = await Promise.all([
        runCall(work, session, { ms: 1_000, progressEveryMs: 100 }, { onProgress: (report) => first.push(report) }),
        runCall(work, session, { ms: 1_200, progressEveryMs: 100 }, { onProgress: (report) => second.push(report) }),
      ]);

      expect(answers.map(outputText)).toEqual(['worked 1000 ms', 'worked 1200 ms']);
      expect(first.length).toBeGreaterThan(3);
      expect(second.length).toBeGreaterThan(3);
      expect(first.every((report) => report.total === 1_000)).toBe(true);
      expect(second.every((report) => report.total === 1_200)).toBe(true);
    });
  });

  describe('when the server is silent for longer than the call timeout', () => {
    it('ends the call at the timeout with a timeout error and cancels it on the server', async () => {
      const label = uniqueLabel();
      const startedAt = Date.now();

      const answer = await runCall(work, SESSION, { ms: 3 * CALL_TIMEOUT_MS, label });
      const elapsed = Date.now() - startedAt;

      expect(failure(answer)).toEqual({ error: `MCP tool call failed: 'work' on MCP server 'slow' did not answer within ${CALL_TIMEOUT_MS} ms` });
      expect(elapsed).toBeGreaterThanOrEqual(CALL_TIMEOUT_MS - 50);
      expect(elapsed).toBeLessThan(CALL_TIMEOUT_MS + 500);
      const { requestId } = await started(recordFile, label);
      await waitFor(() => recorded(recordFile, 'cancelled', (event) => event.requestId === requestId), 'notifications/cancelled for the timed-out call');
    });
  });

  describe('outside a tool call scope (the legacy path)', () => {
    it('runs the call as before', async () => {
      expect(outputText(await work.execute(JSON.stringify({ ms: 10 }), SESSION, USER, WORKSPACE))).toBe('worked 10 ms');
    });
  });
});

describe('an MCP tool call whose Streamable HTTP server dies mid-call', () => {
  const SESSION = 1;
  let recordFile: string;
  let server: SlowMcpHttpProcess;
  let manager: McpClientManager;

  beforeAll(async () => {
    recordFile = newRecordFile();
    server = await startSlowMcpHttpServer(recordFile);
    // A long call timeout: only a noticed connection loss can end the call quickly.
    manager = new McpClientManager([{ id: 1, name: 'web', type: 'http', url: server.url }], { callTimeoutMs: 60_000, connectTimeoutMs: 10_000 });
  });

  afterAll(async () => {
    await manager.closeAll();
    await server.stop();
  });

  it('answers within 2 s naming the lost connection, and the next call after a restart on the same port succeeds', async () => {
    const label = uniqueLabel();
    const call = runCall(tool(manager, 1, 'work'), SESSION, { ms: 30_000, label });
    await started(recordFile, label);

    const killedAt = Date.now();
    await server.kill();
    const answer = await call;

    expect(Date.now() - killedAt).toBeLessThan(2_000);
    expect(failure(answer).error).toMatch(/^MCP tool call failed: lost the connection to MCP server 'web' before 'work' answered \(.+\)$/);

    server = await startSlowMcpHttpServer(recordFile, server.port);
    expect(outputText(await runCall(tool(manager, 1, 'pid'), SESSION, {}))).toBe(String(server.child.pid));
    expect(outputText(await runCall(tool(manager, 1, 'work'), SESSION, { ms: 10 }))).toBe('worked 10 ms');
  });
});
