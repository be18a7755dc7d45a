import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FakeOpenAiProvider } from './support/fake-openai-provider';
import { HttpClient } from './support/http-client';
import { openAiConversationProblem } from './support/openai-conversation-rules';
import { fileServerEnv, spawnServer, waitUntilListening, type ServerProcess } from './support/server-process';
import { withTimeout, WsTestClient } from './support/ws-test-client';

const TOKEN = 'crash-token';

/**
 * A server killed mid-round (SIGKILL: no shutdown hook runs) and started again on the same
 * database file: what had finished is kept, what had not is closed, and the session goes on.
 */
describe('a server killed during a tool round', () => {
  let scratch: string;
  let provider: FakeOpenAiProvider;
  let server: ServerProcess | null = null;
  const clients: WsTestClient[] = [];

  beforeEach(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-crash-'));
    provider = await FakeOpenAiProvider.start();
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    server = null;
    await provider.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  const dbFile = () => path.join(scratch, 'harness.db');
  const start = async (): Promise<HttpClient> => {
    server = spawnServer({ ...fileServerEnv(scratch, TOKEN, provider.url), HARNESS_CLOUD_SHELL: 'on', HARNESS_SHELL_ISOLATION: 'none' });
    const url = await waitUntilListening(server);
    const client = await WsTestClient.connect(url, TOKEN);
    clients.push(client);
    return new HttpClient(url, TOKEN);
  };

  it('keeps the finished calls, closes the unfinished one, and the session takes the next message', async () => {
    let api = await start();
    const session = (await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'crash' })).body as { id: number };
    provider.script({
      toolCalls: [
        { id: 'call_write', name: 'write_file', arguments: { path: 'kept.txt', content: 'written before the crash' } },
        // Still running when the process dies. (A wait for a person would outlive it: waits-restart.e2e-spec.ts.)
        { id: 'call_sleep', name: 'shell', arguments: { command: 'sleep 10' } },
      ],
    });
    const posted = await api.post(`/api/sessions/${session.id}/messages`, { content: 'write then sleep' });
    expect(posted.status).toBe(202);
    const executionId = posted.body.executionId as string;
    const watcher = clients[0];
    await watcher.waitFor((event) => event.type === 'tool_call_result' && event.data.tool_call_id === 'call_write');

    server!.child.kill('SIGKILL');
    await withTimeout(server!.exited, 5_000, 'the server did not die');

    const afterKill = new Database(dbFile(), { readonly: true });
    expect(afterKill.pragma('integrity_check', { simple: true })).toBe('ok');
    // As the kill left it, the conversation is one OpenAI would refuse: the ask call has no answer.
    const stranded = afterKill.prepare('SELECT role, tool_calls, tool_call_id FROM messages ORDER BY id').all() as Array<Record<string, string | null>>;
    const strandedMessages = stranded.map((row) => ({
      role: String(row.role),
      tool_calls: row.tool_calls ? (JSON.parse(row.tool_calls) as Array<{ id: string }>) : undefined,
      tool_call_id: row.tool_call_id ?? undefined,
    }));
    expect(openAiConversationProblem(strandedMessages)).toContain('did not have response messages: call_write, call_sleep');
    // The write had finished: its result was kept, staged for its round.
    expect(afterKill.prepare('SELECT tool_call_id FROM staged_tool_results').all()).toEqual([{ tool_call_id: 'call_write' }]);
    afterKill.close();

    api = await start();
    expect(server!.stderr()).toContain(`recovered run ${executionId}`);

    const messages = (await api.get(`/api/sessions/${session.id}/messages`)).body as Array<Record<string, unknown>>;
    expect(messages.map((message) => [message.role, message.toolCallId ?? null])).toEqual([
      ['user', null],
      ['assistant', null],
      ['tool', 'call_write'],
      ['tool', 'call_sleep'],
    ]);
    expect(messages[3].content).toBe('Tool execution failed: the server stopped before the call finished');
    expect(fs.readFileSync(path.join(scratch, 'workspaces', 'user-1', 'crash', 'kept.txt'), 'utf8')).toBe('written before the crash');

    const activities = (await api.get(`/api/sessions/${session.id}/activities`)).body as Array<Record<string, unknown>>;
    expect(activities.map((activity) => [activity.toolCallId, activity.status])).toEqual([
      ['call_write', 'SUCCESS'],
      ['call_sleep', 'ERROR'],
    ]);

    const stored = new Database(dbFile(), { readonly: true });
    expect(stored.prepare('SELECT status, error FROM runs WHERE execution_id = ?').get(executionId)).toEqual({
      status: 'interrupted',
      error: 'the server stopped before the run finished',
    });
    stored.close();

    // The fake provider rejects a conversation with an unanswered call as OpenAI does.
    provider.script({ content: 'Carrying on.' });
    const next = await api.post(`/api/sessions/${session.id}/messages`, { content: 'are you there?' });
    expect(next.status).toBe(202);
    const end = await clients[1].waitFor((event) => ['message_end', 'error'].includes(event.type) && event.data.executionId === next.body.executionId);
    expect(end.type).toBe('message_end');
    const sent = provider.requests[1].body.messages;
    expect(sent.filter((message) => message.role === 'tool').map((message) => message.tool_call_id)).toEqual(['call_write', 'call_sleep']);
  });
});
