import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FakeOpenAiProvider, Gate } from './support/fake-openai-provider';
import { HttpClient } from './support/http-client';
import { fileServerEnv, killIfRunning, spawnServer, waitUntilListening, type ServerProcess } from './support/server-process';
import { withTimeout, WsTestClient } from './support/ws-test-client';

const TOKEN = 'stop-token';

describe('a server stopped with SIGTERM mid-run', () => {
  let scratch: string;
  let provider: FakeOpenAiProvider;
  let server: ServerProcess | null = null;
  let watcher: WsTestClient | null = null;

  beforeEach(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-stop-'));
    provider = await FakeOpenAiProvider.start();
  });

  afterEach(async () => {
    await watcher?.close();
    await killIfRunning(server);
    server = null;
    await provider.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('tells its watchers the run ended, closes their sockets with 1001, and exits with 0', async () => {
    server = spawnServer(fileServerEnv(scratch, TOKEN, provider.url));
    const url = await waitUntilListening(server);
    const api = new HttpClient(url, TOKEN);
    watcher = await WsTestClient.connect(url, TOKEN);
    const session = (await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' })).body as { id: number };
    // The model streams some text, then holds the answer open: the run is mid-stream at SIGTERM.
    provider.script({ content: 'Thinking it over', gate: new Gate() });
    const posted = await api.post(`/api/sessions/${session.id}/messages`, { content: 'take your time' });
    const executionId = posted.body.executionId as string;
    await watcher.waitForRunEvent('content_delta', executionId);

    server.child.kill('SIGTERM');

    const final = await watcher.waitFor((event) => event.type === 'error' && event.data.executionId === executionId);
    expect(final.data).toEqual({ message: 'the server is shutting down', final: true, executionId });
    expect(watcher.runEvents(executionId).filter((event) => event.type === 'message_end')).toHaveLength(0);
    expect(await withTimeout(watcher.closed, 5_000, 'the socket was not closed')).toEqual({ code: 1001, reason: 'server shutting down' });
    expect(await withTimeout(server.exited, 10_000, 'the server did not exit')).toEqual({ code: 0, signal: null });

    const stored = new Database(path.join(scratch, 'harness.db'), { readonly: true });
    expect(stored.prepare('SELECT status, error FROM runs WHERE execution_id = ?').get(executionId)).toEqual({
      status: 'interrupted',
      error: 'the server is shutting down',
    });
    stored.close();
  });
});
