import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { probeNamespaceIsolationSync } from '../src/harness/tool/impl/shell-isolation';
import { HttpClient } from './support/http-client';
import { isAlive, MCP_DEMO_SERVER } from './support/test-harness';
import { killIfRunning, READY, spawnServer, waitUntil, waitUntilListening, type ServerProcess } from './support/server-process';
import { withTimeout } from './support/ws-test-client';

describe('the server process', () => {
  let scratch: string;
  let server: ServerProcess | null = null;

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-process-'));
  });

  afterEach(async () => {
    await killIfRunning(server);
    server = null;
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  const baseEnv = () => ({
    PORT: '0',
    HARNESS_DB: path.join(scratch, 'harness.db'),
    HARNESS_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
    LLM_PROTOCOL: 'scripted',
  });

  it('prints its address, serves HTTP, and exits with 0 on SIGTERM', async () => {
    server = spawnServer({ ...baseEnv(), HARNESS_TOKENS: 'proc-token=1' });
    const url = await waitUntilListening(server);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(READY.exec(server.stdout())?.[2])).toBeGreaterThan(0);

    const health = await new HttpClient(url, null).get('/health');
    expect(health).toEqual(expect.objectContaining({ status: 200, body: { status: 'ok' } }));
    const created = await new HttpClient(url, 'proc-token').post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    expect(created.status).toBe(201);
    expect(server.stdout()).not.toContain('token for user 1');

    server.child.kill('SIGTERM');
    const exit = await withTimeout(server.exited, 5_000, 'the server did not exit after SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(server.stderr()).toBe('');
    // The database was closed properly: the file is there and a new process can open it.
    expect(fs.existsSync(path.join(scratch, 'harness.db'))).toBe(true);
  });

  it('empties the workspace trash a deletion cut short by a stop left behind', async () => {
    const leftover = path.join(scratch, 'workspaces', '.trash', 'user-1-cut-short');
    fs.mkdirSync(path.join(leftover, 'src'), { recursive: true });
    fs.writeFileSync(path.join(leftover, 'src', 'big.bin'), 'x'.repeat(1024));
    server = spawnServer({ ...baseEnv(), HARNESS_TOKENS: 'proc-token=1' });
    await waitUntilListening(server);
    await waitUntil(async () => !fs.existsSync(leftover), 'the leftover is deleted');
    expect(fs.readdirSync(path.join(scratch, 'workspaces', '.trash'))).toEqual([]);
  });

  it('keeps its data in HARNESS_DB across restarts', async () => {
    server = spawnServer({ ...baseEnv(), HARNESS_TOKENS: 'proc-token=1' });
    let url = await waitUntilListening(server);
    const created = await new HttpClient(url, 'proc-token').post('/api/sessions', { executionMode: 'LOCAL', permissionLevel: 'SMART' });
    server.child.kill('SIGTERM');
    expect((await withTimeout(server.exited, 5_000, 'no exit after SIGTERM')).code).toBe(0);

    server = spawnServer({ ...baseEnv(), HARNESS_TOKENS: 'proc-token=1' });
    url = await waitUntilListening(server);
    const again = await new HttpClient(url, 'proc-token').get(`/api/sessions/${created.body.id}`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(created.body);
    server.child.kill('SIGINT');
    expect(await withTimeout(server.exited, 5_000, 'no exit after SIGINT')).toEqual({ code: 0, signal: null });
  });

  it('without HARNESS_TOKENS prints a generated token that works', async () => {
    server = spawnServer(baseEnv());
    const url = await waitUntilListening(server);
    const match = /token for user 1: (\S+)/.exec(server.stdout());
    expect(match).not.toBeNull();
    const token = String(match?.[1]);
    expect(token.length).toBeGreaterThanOrEqual(16);

    const session = await new HttpClient(url, token).post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    expect(session.status).toBe(201);
    expect(session.body.userId).toBe(1);
    expect((await new HttpClient(url, 'guess').get('/api/tools')).status).toBe(401);

    server.child.kill('SIGTERM');
    expect((await withTimeout(server.exited, 5_000, 'no exit after SIGTERM')).code).toBe(0);
  });

  it('stops the MCP server processes it started when it exits', async () => {
    const mcpConfig = path.join(scratch, 'mcp.json');
    fs.writeFileSync(mcpConfig, JSON.stringify({ servers: [{ id: 1, name: 'demo', type: 'stdio', command: process.execPath, args: [MCP_DEMO_SERVER] }] }));
    const script = { rounds: [{ toolCalls: [{ name: 'mcp__demo__pid', arguments: {} }] }, { content: 'got the pid' }] };
    server = spawnServer({ ...baseEnv(), HARNESS_TOKENS: 'proc-token=1', HARNESS_MCP_CONFIG: mcpConfig, LLM_SCRIPT: JSON.stringify(script) });
    const api = new HttpClient(await waitUntilListening(server), 'proc-token');
    const session = await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [1] });
    expect((await api.post(`/api/sessions/${session.body.id}/messages`, { content: 'which process?' })).status).toBe(202);
    let pid = NaN;
    await waitUntil(async () => {
      const messages = (await api.get(`/api/sessions/${session.body.id}/messages`)).body as Array<{ role: string; content: string }>;
      pid = Number(messages.find((message) => message.role === 'tool')?.content);
      return messages.at(-1)?.content === 'got the pid';
    }, 'the scripted run finished');
    expect(Number.isInteger(pid)).toBe(true);
    expect(isAlive(pid)).toBe(true);

    server.child.kill('SIGTERM');
    expect(await withTimeout(server.exited, 5_000, 'no exit after SIGTERM')).toEqual({ code: 0, signal: null });
    await waitUntil(async () => !isAlive(pid), `MCP server process ${pid} ended`);
  });

  const namespaces = probeNamespaceIsolationSync();
  (namespaces.ok || process.env.HARNESS_TEST_REQUIRE_NAMESPACES === '1' ? it : it.skip)(
    `keeps the server's secrets and other users' files out of reach of a CLOUD shell command${namespaces.ok ? '' : ` (skipped: ${namespaces.error})`}`,
    async () => {
      // Another user's workspace file, next to this user's workspace.
      const otherWorkspace = path.join(scratch, 'workspaces', 'user-2', 'default');
      fs.mkdirSync(otherWorkspace, { recursive: true });
      fs.writeFileSync(path.join(otherWorkspace, 'diary.txt'), 'other-user-secret\n');
      const probe = [
        'echo "env:$(env | grep -c -e proc-token -e sk-live)"',
        'echo "proc:$(cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c -e proc-token -e sk-live)"',
        `echo "root:$(ls ${JSON.stringify(path.join(scratch, 'workspaces'))})"`,
        `echo "db:$(ls ${JSON.stringify(scratch)} | tr "\\n" " ")"`,
        `cat ${JSON.stringify(path.join(otherWorkspace, 'diary.txt'))} 2>/dev/null || echo "diary:unreadable"`,
      ].join('; ');
      const script = { rounds: [{ toolCalls: [{ name: 'shell', arguments: { command: probe } }] }, { content: 'probed' }] };
      server = spawnServer({
        ...baseEnv(),
        HARNESS_TOKENS: 'proc-token=1,other-token=2',
        LLM_API_KEY: 'sk-live-key',
        HARNESS_CLOUD_SHELL: 'on',
        LLM_SCRIPT: JSON.stringify(script),
      });
      const api = new HttpClient(await waitUntilListening(server), 'proc-token');
      const session = await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      expect((await api.post(`/api/sessions/${session.body.id}/messages`, { content: 'look around' })).status).toBe(202);
      let output = '';
      await waitUntil(async () => {
        const messages = (await api.get(`/api/sessions/${session.body.id}/messages`)).body as Array<{ role: string; content: string }>;
        output = messages.find((message) => message.role === 'tool')?.content ?? '';
        return messages.at(-1)?.content === 'probed';
      }, 'the scripted run finished', 15_000);

      const result = JSON.parse(output) as { exit_code: number; stdout: string };
      expect(result.stdout.split('\n')).toEqual(['env:0', 'proc:0', 'root:user-1', 'db:workspaces ', 'diary:unreadable', '']);
      expect(output).not.toContain('proc-token');
      expect(output).not.toContain('other-user-secret');
      expect(server.stderr()).not.toContain('NOT isolated');
      server.child.kill('SIGTERM');
      expect((await withTimeout(server.exited, 5_000, 'no exit after SIGTERM')).code).toBe(0);
    },
  );

  describe('when the configuration cannot be used', () => {
    /** Each case: what is wrong, the variable the line must name, and the environment (given the scratch directory). */
    const cases: Array<[string, string, (dir: string) => Record<string, string>]> = [
      ['LLM_SCRIPT names a missing file', 'LLM_SCRIPT', (dir) => ({ LLM_SCRIPT: path.join(dir, 'absent.json') })],
      ['LLM_SCRIPT is invalid JSON', 'LLM_SCRIPT', () => ({ LLM_SCRIPT: '{"rounds": [' })],
      ['LLM_SCRIPT names a scenario of the wrong shape', 'LLM_SCRIPT', (dir) => ({ LLM_SCRIPT: writeFile(dir, 'scenario.json', '{"rounds":{}}') })],
      ['HARNESS_MCP_CONFIG names a missing file', 'HARNESS_MCP_CONFIG', (dir) => ({ HARNESS_MCP_CONFIG: path.join(dir, 'absent.json') })],
      ['HARNESS_MCP_CONFIG is invalid JSON', 'HARNESS_MCP_CONFIG', (dir) => ({ HARNESS_MCP_CONFIG: writeFile(dir, 'mcp.json', '{"servers": [') })],
      [
        'HARNESS_MCP_CONFIG lists a server type the server does not support',
        'HARNESS_MCP_CONFIG',
        (dir) => ({ HARNESS_MCP_CONFIG: writeFile(dir, 'mcp.json', JSON.stringify({ servers: [{ id: 1, name: 'rpc', type: 'grpc' }] })) }),
      ],
      ['HARNESS_DB names a file that is not a database', 'HARNESS_DB', (dir) => ({ HARNESS_DB: writeFile(dir, 'notes.txt', 'not a database') })],
      [
        'HARNESS_DB names a file with a SQLite header and garbage behind it',
        'HARNESS_DB',
        (dir) => ({ HARNESS_DB: writeFile(dir, 'damaged.db', 'SQLite format 3\0' + 'garbage, not pages '.repeat(400)) }),
      ],
      [
        'HARNESS_DB names a database written by a newer schema',
        'HARNESS_DB',
        (dir) => {
          const file = path.join(dir, 'newer.db');
          const db = new Database(file);
          db.pragma('user_version = 999');
          db.close();
          return { HARNESS_DB: file };
        },
      ],
      ['HARNESS_WORKSPACE_ROOT names a file', 'HARNESS_WORKSPACE_ROOT', (dir) => ({ HARNESS_WORKSPACE_ROOT: writeFile(dir, 'notes.txt', 'x') })],
      ['PORT is not a port', 'PORT', () => ({ PORT: '70000' })],
      ['HARNESS_TOKENS has a token without a user id', 'HARNESS_TOKENS', () => ({ HARNESS_TOKENS: 'no-user-id' })],
    ];

    it.each(cases)('stops when %s, with one line naming %s, no stack trace and exit code 1', async (_case, variable, env) => {
      server = spawnServer({ ...baseEnv(), HARNESS_TOKENS: 'proc-token=1', ...env(scratch) });
      const exit = await withTimeout(server.exited, 10_000, 'the server did not exit');

      expect(exit).toEqual({ code: 1, signal: null });
      expectOneConfigLine(server.stderr(), variable);
      expect(server.stdout()).not.toMatch(READY);
    });

    it('stops with one line naming PORT when the port is taken', async () => {
      const occupier = net.createServer();
      await new Promise<void>((resolve) => occupier.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = occupier.address() as net.AddressInfo;
        server = spawnServer({ ...baseEnv(), HARNESS_TOKENS: 'proc-token=1', PORT: String(port) });
        expect(await withTimeout(server.exited, 10_000, 'the server did not exit')).toEqual({ code: 1, signal: null });
        expectOneConfigLine(server.stderr(), 'PORT');
        expect(server.stderr()).toContain(`${port} is already in use`);
      } finally {
        await new Promise<void>((resolve) => occupier.close(() => resolve()));
      }
    });

    /** `harness: VARIABLE: problem`, plain text on one line: no stack frames, no colours. */
    function expectOneConfigLine(stderr: string, variable: string): void {
      expect(stderr.endsWith('\n')).toBe(true);
      expect(stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^harness: ${variable}: \\S`))]);
      expect(stderr).not.toMatch(/^\s+at /m);
      expect(stderr).not.toContain('\u001b[');
    }
  });
});

function writeFile(dir: string, name: string, content: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}
