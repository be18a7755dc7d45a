import * as fs from 'node:fs';
import { openAiConversationProblem } from './support/openai-conversation-rules';
import { RestartableServer } from './support/restartable-server';

const TOKEN = 'crash-token';
const ENV = { HARNESS_CLOUD_SHELL: 'on', HARNESS_SHELL_ISOLATION: 'none' };

/**
 * A server killed mid-round (SIGKILL: no shutdown hook runs) and started again on the same
 * database file: what had finished is kept, what had not is closed, and the session goes on.
 */
describe('a server killed during a tool round', () => {
  let harness: RestartableServer;

  beforeEach(async () => {
    harness = await RestartableServer.create(TOKEN, 'harness-crash-');
  });

  afterEach(() => harness.dispose());

  it('keeps the finished calls, closes the unfinished one, and the session takes the next message', async () => {
    let { api, client: watcher } = await harness.start(ENV);
    const { provider } = harness;
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
    await watcher.waitFor((event) => event.type === 'tool_call_result' && event.data.tool_call_id === 'call_write');

    await harness.stop('SIGKILL', 5_000);

    harness.readDb((afterKill) => {
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
    });

    ({ api, client: watcher } = await harness.start(ENV));
    expect(harness.process!.stderr()).toContain(`recovered run ${executionId}`);

    const messages = (await api.get(`/api/sessions/${session.id}/messages`)).body as Array<Record<string, unknown>>;
    expect(messages.map((message) => [message.role, message.toolCallId ?? null])).toEqual([
      ['user', null],
      ['assistant', null],
      ['tool', 'call_write'],
      ['tool', 'call_sleep'],
    ]);
    expect(messages[3].content).toBe('Tool execution failed: the server stopped before the call finished');
    expect(fs.readFileSync(harness.workspaceFile('crash', 'kept.txt'), 'utf8')).toBe('written before the crash');

    const activities = (await api.get(`/api/sessions/${session.id}/activities`)).body as Array<Record<string, unknown>>;
    expect(activities.map((activity) => [activity.toolCallId, activity.status])).toEqual([
      ['call_write', 'SUCCESS'],
      ['call_sleep', 'ERROR'],
    ]);

    expect(harness.readDb((stored) => stored.prepare('SELECT status, error FROM runs WHERE execution_id = ?').get(executionId))).toEqual({
      status: 'interrupted',
      error: 'the server stopped before the run finished',
    });

    // The fake provider rejects a conversation with an unanswered call as OpenAI does.
    provider.script({ content: 'Carrying on.' });
    const next = await api.post(`/api/sessions/${session.id}/messages`, { content: 'are you there?' });
    expect(next.status).toBe(202);
    const end = await watcher.waitFor((event) => ['message_end', 'error'].includes(event.type) && event.data.executionId === next.body.executionId);
    expect(end.type).toBe('message_end');
    const sent = provider.requests[1].body.messages;
    expect(sent.filter((message) => message.role === 'tool').map((message) => message.tool_call_id)).toEqual(['call_write', 'call_sleep']);
  });
});
