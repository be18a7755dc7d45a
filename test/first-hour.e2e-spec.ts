import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HttpClient } from './support/http-client';
import { killIfRunning, spawnServer, waitUntil, waitUntilListening, type ServerProcess } from './support/server-process';
import { withTimeout } from './support/ws-test-client';

const REPO_ROOT = path.resolve(__dirname, '..');
const CLOUD_SCRIPT_DONE = 'Notes written and read back; the MCP server answered.';

/**
 * The README's path for a fresh clone: `npm start` from the repository root with a token and
 * `HARNESS_MCP_CONFIG=./mcp.example.json`, the default (scripted) model, one session with the
 * demo MCP server, one message carrying the `[demo:cloud]` marker, then its activities.
 */
describe('the first hour, as the README walks it', () => {
  let scratch: string;
  let server: ServerProcess | null = null;

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-first-hour-'));
  });

  afterEach(async () => {
    await killIfRunning(server);
    server = null;
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('runs the tools of the demo script, the MCP example server included, and records their activities', async () => {
    server = spawnServer({
      PORT: '0',
      HARNESS_DB: path.join(scratch, 'harness.db'),
      HARNESS_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
      HARNESS_TOKENS: 'secret-a=1',
      // Relative, as in the README: the file and the demo server's path inside it are both
      // taken from the directory the server runs in.
      HARNESS_MCP_CONFIG: './mcp.example.json',
    }, REPO_ROOT);
    const api = new HttpClient(await waitUntilListening(server), 'secret-a');

    const session = await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [1] });
    expect(session.status).toBe(201);
    const sent = await api.post(`/api/sessions/${session.body.id}/messages`, { content: '[demo:cloud] Write some notes, then try the tools' });
    expect(sent.status).toBe(202);
    await waitUntil(async () => {
      const messages = (await api.get(`/api/sessions/${session.body.id}/messages`)).body as Array<{ content: string | null }>;
      return messages.at(-1)?.content === CLOUD_SCRIPT_DONE;
    }, 'the scripted run finished', 15_000);

    const activities = (await api.get(`/api/sessions/${session.body.id}/activities`)).body as Array<{ toolName: string; status: string }>;
    expect(activities.map(({ toolName, status }) => `${toolName} ${status}`)).toEqual([
      'write_file SUCCESS',
      'read_file SUCCESS',
      'read_file ERROR',
      // HARNESS_CLOUD_SHELL is off by default.
      'shell ERROR',
      'mcp__demo__echo SUCCESS',
      'mcp__demo__fail ERROR',
      'mcp__demo__stats SUCCESS',
      'no_such_tool ERROR',
    ]);

    server.child.kill('SIGTERM');
    expect(await withTimeout(server.exited, 5_000, 'no exit after SIGTERM')).toEqual({ code: 0, signal: null });
    expect(server.stderr()).toBe('');
  });
});
