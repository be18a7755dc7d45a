import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import * as path from 'node:path';
import type { ToolOutput } from '../tool/tool-output';
import { McpClientManager } from './mcp-client-manager';
import { McpConnectError, McpRequestError, UnknownMcpServerError } from './mcp-errors';
import type { McpServerConfig } from './mcp-server-config';
import { outputText } from './testing/tool-output-text';

const DEMO_SERVER_JS = path.join(__dirname, '../../../build/dev/demo/mcp-demo-server.js');
const DEMO_SERVER_TS = path.join(__dirname, '../../demo/mcp-demo-server.ts');
const DEMO_TOOLS = ['crash', 'echo', 'fail', 'pid', 'slow', 'stats'];
const CALL_TIMEOUT_MS = 400;
const CONNECT_TIMEOUT_MS = 5_000;

/** The specs run the compiled demo server as a real child process; a stale build would test old code. */
function requireBuiltDemoServer(): void {
  if (!existsSync(DEMO_SERVER_JS)) {
    throw new Error(`${DEMO_SERVER_JS} is missing: run npm run build:dev first`);
  }
  if (statSync(DEMO_SERVER_JS).mtimeMs < statSync(DEMO_SERVER_TS).mtimeMs) {
    throw new Error(`${DEMO_SERVER_JS} is older than its source: run npm run build:dev first`);
  }
}

function stdioServer(overrides: Partial<McpServerConfig> = {}): McpServerConfig {
  return { id: 1, name: 'demo', type: 'stdio', command: process.execPath, args: [DEMO_SERVER_JS], env: {}, ...overrides };
}

function newManager(servers: McpServerConfig[], options: { callTimeoutMs?: number; connectTimeoutMs?: number; idleTimeoutMs?: number } = {}) {
  return new McpClientManager(servers, { callTimeoutMs: CALL_TIMEOUT_MS, connectTimeoutMs: CONNECT_TIMEOUT_MS, ...options });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, description: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${description}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 20));
  }
}

/** The text the model reads of a call's output. */
async function text(call: Promise<ToolOutput>): Promise<string> {
  return outputText(await call);
}

/**
 * A call that got no result: an `isError` output whose text is the JSON error object the model
 * has always read, and whose `errorMessage` is that object's message. Returns the object.
 */
async function failedCall(call: Promise<ToolOutput>): Promise<{ error: string }> {
  const output = await call;
  expect(output.isError).toBe(true);
  expect(output.parts).toHaveLength(1);
  const answer = JSON.parse(outputText(output)) as { error: string };
  expect(output.errorMessage).toBe(answer.error);
  return answer;
}

async function pidOf(manager: McpClientManager, sessionId: number, serverId = 1): Promise<number> {
  const answer = await text(manager.callTool(sessionId, serverId, 'pid', '{}'));
  const pid = Number(answer);
  if (!Number.isInteger(pid)) throw new Error(`pid tool answered ${answer}`);
  return pid;
}

/** Starts the demo server over Streamable HTTP in its own process and waits for its ready line. */
async function startHttpDemo(): Promise<{ child: ChildProcess; url: string; readyLine: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [DEMO_SERVER_JS, '--http', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const readyLine = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const newline = output.indexOf('\n');
      if (newline !== -1) resolve(output.slice(0, newline));
    });
    child.once('exit', (code) => reject(new Error(`demo server exited with ${code} before it was ready`)));
  });
  const url = readyLine.replace('mcp-demo-server listening on ', '');
  return {
    child,
    url,
    readyLine,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
      await exited;
    },
  };
}

/** A localhost port that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('McpClientManager', () => {
  beforeAll(requireBuiltDemoServer);

  describe('with a stdio server', () => {
    // Starting a server process is the slow part, so read-only cases share session SHARED's
    // server; a case that crashes or closes a server uses sessions of its own.
    const SHARED = 1;
    let manager: McpClientManager;
    beforeAll(() => {
      manager = newManager([stdioServer()]);
    });
    afterAll(() => manager.closeAll());

    it('lists the server tools as refs carrying the server id and name', async () => {
      const refs = await manager.listTools(SHARED, 1);

      expect(refs.map((ref) => ref.toolName).sort()).toEqual(DEMO_TOOLS);
      const echo = refs.find((ref) => ref.toolName === 'echo')!;
      expect(echo).toMatchObject({ serverId: 1, serverName: 'demo', description: 'Returns the given text unchanged.' });
      expect(echo.inputSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    });

    it('returns the text of a successful call as a text part', async () => {
      await expect(manager.callTool(SHARED, 1, 'echo', '{"text":"hello\\nworld"}')).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'hello\nworld' }],
      });
    });

    it("marks an isError result as an error whose message is the server's text, unwrapped", async () => {
      await expect(manager.callTool(SHARED, 1, 'fail', '{"reason":"disk full"}')).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'disk full' }],
        isError: true,
        errorMessage: 'disk full',
      });
      await expect(text(manager.callTool(SHARED, 1, 'fail', '{}'))).resolves.toBe('failed on purpose');
    });

    it('keeps structured content beside the text parts', async () => {
      await expect(manager.callTool(SHARED, 1, 'stats', '{"numbers":[1,2,6]}')).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: '{"count":3,"sum":9,"mean":3}' }],
        structuredContent: { count: 3, sum: 9, mean: 3 },
      });
    });

    it('reports an unknown tool and arguments the server rejects as errors', async () => {
      const unknown = await manager.callTool(SHARED, 1, 'no_such_tool', '{}');
      expect(unknown.isError).toBe(true);
      expect(outputText(unknown)).toContain('no_such_tool');

      const wrongType = await manager.callTool(SHARED, 1, 'echo', '{"text":5}');
      expect(wrongType.isError).toBe(true);
      expect(wrongType.errorMessage).toContain('text');
    });

    it('treats empty arguments as an empty object', async () => {
      await expect(pidOf(manager, SHARED)).resolves.toEqual(expect.any(Number));
      await expect(text(manager.callTool(SHARED, 1, 'pid', ''))).resolves.toMatch(/^\d+$/);
    });

    describe('when the arguments are not a JSON object', () => {
      it.each([
        ['not json', 'not valid JSON'],
        ['[1,2]', 'got array'],
        ['"text"', 'got string'],
        ['null', 'got null'],
      ])('refuses %s without contacting the server', async (argumentsJson, problem) => {
        // A server that cannot start would turn any contact into a connection error.
        const unreachable = newManager([stdioServer({ command: path.join(__dirname, 'no-such-command') })]);

        const error = (await failedCall(unreachable.callTool(SHARED, 1, 'echo', argumentsJson))).error as string;

        expect(error).toContain("Invalid arguments for MCP tool 'echo'");
        expect(error).toContain(problem);
        await unreachable.closeAll();
      });
    });

    it('reports an unknown server id as a failed call', async () => {
      expect(await failedCall(manager.callTool(SHARED, 99, 'echo', '{"text":"x"}'))).toEqual({
        error: 'MCP tool call failed: Unknown MCP server id 99',
      });
      await expect(manager.listTools(SHARED, 99)).rejects.toBeInstanceOf(UnknownMcpServerError);
    });

    it('lists and finds the configured servers', () => {
      expect(manager.listServers().map((server) => server.name)).toEqual(['demo']);
      expect(manager.getServer(1)?.command).toBe(process.execPath);
      expect(manager.getServer(2)).toBeUndefined();
    });

    describe('when a call outlives callTimeoutMs', () => {
      it('answers with a timeout error and keeps the client for the next call', async () => {
        const pidBefore = await pidOf(manager, SHARED);

        const answer = await failedCall(manager.callTool(SHARED, 1, 'slow', '{"ms":10000}'));

        expect(answer.error).toBe(`MCP tool call failed: 'slow' on MCP server 'demo' did not answer within ${CALL_TIMEOUT_MS} ms`);
        await expect(text(manager.callTool(SHARED, 1, 'echo', '{"text":"still here"}'))).resolves.toBe('still here');
        await expect(pidOf(manager, SHARED)).resolves.toBe(pidBefore);
      });
    });

    describe('when the server exits mid-call', () => {
      it("answers with an error, reconnects on the next call and leaves other sessions' servers alone", async () => {
        const otherSession = await pidOf(manager, SHARED);
        const pidBefore = await pidOf(manager, 10);

        const answer = await failedCall(manager.callTool(10, 1, 'crash', '{}'));

        expect(answer.error).toMatch(/^MCP tool call failed: MCP server 'demo' closed the connection/);
        expect(isAlive(pidBefore)).toBe(false);
        await expect(pidOf(manager, SHARED)).resolves.toBe(otherSession);
        const pidAfter = await pidOf(manager, 10);
        expect(pidAfter).not.toBe(pidBefore);
        await expect(text(manager.callTool(10, 1, 'echo', '{"text":"back"}'))).resolves.toBe('back');
      });
    });

    it('lets concurrent first callers of a session share one connection', async () => {
      const pids = await Promise.all([pidOf(manager, 40), pidOf(manager, 40), manager.listTools(40, 1).then(() => pidOf(manager, 40))]);

      expect(new Set(pids).size).toBe(1);
    });

    describe('closeSession', () => {
      it("stops the session's server, leaves other sessions alone, and lets the session connect again", async () => {
        const staying = await pidOf(manager, SHARED);
        const closing = await pidOf(manager, 20);

        await manager.closeSession(20);

        expect(isAlive(closing)).toBe(false);
        await expect(pidOf(manager, SHARED)).resolves.toBe(staying);
        const reopened = await pidOf(manager, 20);
        expect(reopened).not.toBe(closing);
      });

      it('does nothing for a session without clients', async () => {
        await expect(manager.closeSession(404)).resolves.toBeUndefined();
      });
    });

  });

  it('closeAll stops the servers of every session', async () => {
    const manager = newManager([stdioServer()]);
    const pids = await Promise.all([pidOf(manager, 1), pidOf(manager, 2)]);

    await manager.closeAll();

    expect(pids.map(isAlive)).toEqual([false, false]);
  });

  describe('when a stdio server cannot be used', () => {
    it('reports a command that cannot be started', async () => {
      const manager = newManager([stdioServer({ command: path.join(__dirname, 'no-such-command') })]);

      const answer = await failedCall(manager.callTool(1, 1, 'echo', '{"text":"x"}'));

      expect(answer.error).toMatch(/^MCP tool call failed: Could not connect to MCP server 'demo': .*ENOENT/);
      await expect(manager.listTools(1, 1)).rejects.toBeInstanceOf(McpConnectError);
      await manager.closeAll();
    });

    it("quotes the stderr of a server that exits during the handshake", async () => {
      const manager = newManager([
        stdioServer({ args: ['-e', 'process.stderr.write("missing API key\\n"); process.exit(3)'] }),
      ]);

      const failure = await manager.listTools(1, 1).catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(McpConnectError);
      expect((failure as McpConnectError).message).toContain('missing API key');
      expect((failure as McpConnectError).serverName).toBe('demo');
      await manager.closeAll();
    });

    it('gives up on a server that never answers the handshake', async () => {
      // Reads stdin and never writes: a process that is not an MCP server.
      const manager = newManager([stdioServer({ args: ['-e', 'process.stdin.resume()'] })], { connectTimeoutMs: 300 });

      const answer = await failedCall(manager.callTool(1, 1, 'echo', '{"text":"x"}'));

      expect(answer.error).toMatch(/^MCP tool call failed: Could not connect to MCP server 'demo': .*300 ms/);
      await manager.closeAll();
    });

    it('passes the configured environment to the server', async () => {
      const manager = newManager([
        stdioServer({
          args: ['-e', 'process.stderr.write("token=" + process.env.DEMO_TOKEN); process.exit(1)'],
          env: { DEMO_TOKEN: 'abc123' },
        }),
      ]);

      await expect(manager.listTools(1, 1)).rejects.toThrow('token=abc123');
      await manager.closeAll();
    });
  });

  describe('with a Streamable HTTP server', () => {
    let demo: Awaited<ReturnType<typeof startHttpDemo>>;
    let manager: McpClientManager;
    beforeAll(async () => {
      demo = await startHttpDemo();
    });
    afterAll(() => demo.stop());
    beforeEach(() => {
      manager = newManager([{ id: 7, name: 'web', type: 'http', url: demo.url }]);
    });
    afterEach(() => manager.closeAll());

    it('prints its endpoint when ready', () => {
      expect(demo.readyLine).toMatch(/^mcp-demo-server listening on http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    });

    it('lists the server tools', async () => {
      const refs = await manager.listTools(1, 7);

      expect(refs.map((ref) => ref.toolName).sort()).toEqual(DEMO_TOOLS);
      expect(refs.every((ref) => ref.serverId === 7 && ref.serverName === 'web')).toBe(true);
    });

    it('gives success, isError, structured content and unknown tools like stdio', async () => {
      await expect(text(manager.callTool(1, 7, 'echo', '{"text":"over http"}'))).resolves.toBe('over http');
      await expect(manager.callTool(1, 7, 'fail', '{"reason":"nope"}')).resolves.toMatchObject({ isError: true, errorMessage: 'nope' });
      await expect(manager.callTool(1, 7, 'stats', '{"numbers":[]}')).resolves.toMatchObject({ structuredContent: { count: 0, sum: 0, mean: null } });
      const missing = await manager.callTool(1, 7, 'missing', '{}');
      expect(missing.isError).toBe(true);
      expect(outputText(missing)).toContain('missing');
    });

    it('times out a slow call and keeps working', async () => {
      const answer = await failedCall(manager.callTool(1, 7, 'slow', '{"ms":10000}'));

      expect(answer.error).toContain(`did not answer within ${CALL_TIMEOUT_MS} ms`);
      await expect(text(manager.callTool(1, 7, 'echo', '{"text":"after"}'))).resolves.toBe('after');
    });

    it('reports a server that is not listening', async () => {
      const port = await closedPort();
      const gone = newManager([{ id: 8, name: 'gone', type: 'http', url: `http://127.0.0.1:${port}/mcp` }]);

      const answer = await failedCall(gone.callTool(1, 8, 'echo', '{"text":"x"}'));

      expect(answer.error).toMatch(/^MCP tool call failed: Could not connect to MCP server 'gone'/);
      await expect(gone.listTools(1, 8)).rejects.toBeInstanceOf(McpConnectError);
      await gone.closeAll();
    });

    it('reports a server that exits mid-call as a lost connection and tries to reconnect on the next call', async () => {
      const doomed = await startHttpDemo();
      // A call timeout far beyond the test's: only a noticed connection loss answers in time.
      const crashing = newManager([{ id: 9, name: 'doomed', type: 'http', url: doomed.url }], { callTimeoutMs: 60_000 });
      try {
        await expect(text(crashing.callTool(1, 9, 'echo', '{"text":"alive"}'))).resolves.toBe('alive');

        const answer = await failedCall(crashing.callTool(1, 9, 'crash', '{}'));

        expect(answer.error).toMatch(/^MCP tool call failed: lost the connection to MCP server 'doomed' before 'crash' answered \(.+\)$/);
        // The dead client was dropped: the next call starts a new connection (which finds nobody).
        const next = await failedCall(crashing.callTool(1, 9, 'echo', '{"text":"x"}'));
        expect(next.error).toMatch(/^MCP tool call failed: Could not connect to MCP server 'doomed'/);
      } finally {
        await crashing.closeAll();
        await doomed.stop();
      }
    });
  });

  describe('with timeouts in the server configuration', () => {
    it("takes a server's callTimeoutMs over the manager's", async () => {
      const manager = newManager([stdioServer({ callTimeoutMs: 150 })], { callTimeoutMs: 10_000 });
      try {
        await pidOf(manager, 1);

        const answer = await failedCall(manager.callTool(1, 1, 'slow', '{"ms":5000}'));

        expect(answer.error).toBe("MCP tool call failed: 'slow' on MCP server 'demo' did not answer within 150 ms");
      } finally {
        await manager.closeAll();
      }
    });

    it("takes a server's connectTimeoutMs over the manager's", async () => {
      const manager = newManager([stdioServer({ args: ['-e', 'process.stdin.resume()'], connectTimeoutMs: 200 })], { connectTimeoutMs: 10_000 });
      try {
        const answer = await failedCall(manager.callTool(1, 1, 'echo', '{"text":"x"}'));

        expect(answer.error).toBe("MCP tool call failed: Could not connect to MCP server 'demo': no handshake within 200 ms");
      } finally {
        await manager.closeAll();
      }
    });
  });

  describe('when a call is cancelled through its signal', () => {
    it('answers at once with a cancelled error and keeps the client for the next call', async () => {
      const manager = newManager([stdioServer()], { callTimeoutMs: 10_000 });
      try {
        const pid = await pidOf(manager, 1);
        const controller = new AbortController();
        setTimeout(() => controller.abort(new Error('the run was cancelled')), 100);
        const startedAt = Date.now();

        const answer = await failedCall(manager.callTool(1, 1, 'slow', '{"ms":5000}', { signal: controller.signal }));

        expect(Date.now() - startedAt).toBeLessThan(1_000);
        expect(answer).toEqual({ error: "MCP tool call cancelled before 'slow' on MCP server 'demo' answered (the run was cancelled)" });
        await expect(pidOf(manager, 1)).resolves.toBe(pid);
      } finally {
        await manager.closeAll();
      }
    });

    it('does not connect for a call whose signal has already fired', async () => {
      const manager = newManager([stdioServer()]);

      const answer = await failedCall(manager.callTool(1, 1, 'echo', '{"text":"x"}', { signal: AbortSignal.abort() }));

      expect(answer).toEqual({ error: "MCP tool call cancelled before 'echo' on MCP server 'demo' answered" });
      expect(manager.hasClients(1)).toBe(false);
    });

    it('stops waiting for a connection that is still being made', async () => {
      // Never answers the handshake: only the signal can end the wait before connectTimeoutMs.
      const manager = newManager([stdioServer({ args: ['-e', 'process.stdin.resume()'] })], { connectTimeoutMs: 2_000 });
      try {
        const startedAt = Date.now();

        const answer = await failedCall(manager.callTool(1, 1, 'echo', '{"text":"x"}', { signal: AbortSignal.timeout(100) }));

        expect(Date.now() - startedAt).toBeLessThan(1_000);
        expect(answer).toEqual({ error: "MCP tool call cancelled before 'echo' on MCP server 'demo' answered (the call's deadline passed)" });
      } finally {
        await manager.closeAll();
      }
    });
  });

  describe('when a session goes idle', () => {
    it("stops the session's servers after idleTimeoutMs without a request, and connects again on the next", async () => {
      const manager = newManager([stdioServer()], { idleTimeoutMs: 150 });
      const first = await pidOf(manager, 1);
      expect(manager.hasClients(1)).toBe(true);

      await waitFor(() => !manager.hasClients(1) && !isAlive(first), 'the idle server is stopped');

      const second = await pidOf(manager, 1);
      expect(second).not.toBe(first);
      await manager.closeAll();
    });

    it('does not close the clients while a call of the session is still running', async () => {
      const manager = newManager([stdioServer()], { idleTimeoutMs: 100, callTimeoutMs: 5_000 });
      const pid = await pidOf(manager, 1);
      await expect(text(manager.callTool(1, 1, 'slow', '{"ms":400}'))).resolves.toBe('waited 400 ms');
      await expect(pidOf(manager, 1)).resolves.toBe(pid);
      await manager.closeAll();
      expect(isAlive(pid)).toBe(false);
    });

    it('keeps a retained session open past idleTimeoutMs, and starts the idle clock when it is released', async () => {
      const manager = newManager([stdioServer()], { idleTimeoutMs: 100 });
      const release = manager.retain(1);
      const pid = await pidOf(manager, 1);
      await new Promise<void>((resolve) => setTimeout(resolve, 300));
      await expect(pidOf(manager, 1)).resolves.toBe(pid);

      release();
      release(); // a second call changes nothing
      await waitFor(() => !manager.hasClients(1) && !isAlive(pid), 'the released session is closed');
      await manager.closeAll();
    });

    it('keeps the clients with idleTimeoutMs 0', async () => {
      const manager = newManager([stdioServer()], { idleTimeoutMs: 0 });
      const pid = await pidOf(manager, 1);
      await new Promise<void>((resolve) => setTimeout(resolve, 200));
      await expect(pidOf(manager, 1)).resolves.toBe(pid);
      await manager.closeAll();
    });
  });

  describe('when a server pages its tool list forever', () => {
    const pagingServer = (nextCursor: string) =>
      [
        "const rl = require('readline').createInterface({ input: process.stdin });",
        'let page = 0;',
        'rl.on("line", (line) => {',
        '  const m = JSON.parse(line); if (m.id === undefined) return;',
        '  const send = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, ...o }) + "\\n");',
        '  if (m.method === "initialize") send({ result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "paging", version: "1" } } });',
        `  else { page++; send({ result: { tools: [{ name: "t" + page, inputSchema: { type: "object" } }], nextCursor: ${nextCursor} } }); }`,
        '});',
      ].join('\n');

    it.each([
      ['repeats a cursor', '"again"', /returned the cursor 'again' twice/],
      ['never stops', '"c" + page', /did not end after 100 pages/],
    ])('gives up on a server that %s', async (_, nextCursor, reason) => {
      const manager = newManager([stdioServer({ name: 'paging', args: ['-e', pagingServer(nextCursor)] })]);
      const failure = await manager.listTools(1, 1).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(McpRequestError);
      expect((failure as Error).message).toMatch(reason);
      await manager.closeAll();
    });
  });

  describe('when a connected server answers requests with JSON-RPC errors', () => {
    // A minimal hand-written stdio server: completes the handshake, then fails every request.
    const brokenServer = [
      "const rl = require('readline').createInterface({ input: process.stdin });",
      'rl.on("line", (line) => {',
      '  const m = JSON.parse(line); if (m.id === undefined) return;',
      '  const send = (o) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, ...o }) + "\\n");',
      '  if (m.method === "initialize") send({ result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "broken", version: "1" } } });',
      '  else send({ error: { code: -32603, message: "tools are broken" } });',
      '});',
    ].join('\n');

    it('wraps a failed tools/list in McpRequestError and a failed call in an error result', async () => {
      const manager = newManager([stdioServer({ name: 'broken', args: ['-e', brokenServer] })]);

      const failure = await manager.listTools(1, 1).catch((error: unknown) => error);
      const answer = await failedCall(manager.callTool(1, 1, 'anything', '{}'));

      expect(failure).toBeInstanceOf(McpRequestError);
      expect((failure as McpRequestError).message).toBe("MCP server 'broken' failed tools/list: MCP error -32603: tools are broken");
      expect(answer).toEqual({ error: 'MCP tool call failed: MCP error -32603: tools are broken' });
      await manager.closeAll();
    });
  });
});
