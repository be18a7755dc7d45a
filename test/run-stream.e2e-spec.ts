import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ProviderMessage } from './support/fake-openai-provider';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';
import type { WsEvent } from './support/ws-test-client';

interface StoredMessage {
  id: number;
  role: string;
  content: string | null;
  toolCalls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  toolCallId?: string;
  createdAt: string;
}

describe('a run over HTTP and WebSocket', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  /** A CLOUD session whose workspace holds two seed files for `glob` to find. */
  async function sessionWithSeedFiles() {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'seeded' });
    const workspace = path.join(t.workspaceRoot, 'user-1', 'seeded');
    fs.mkdirSync(path.join(workspace, 'seed'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'seed', 'one.txt'), 'one\n');
    fs.writeFileSync(path.join(workspace, 'seed', 'two.txt'), 'two\n');
    return { session, workspace };
  }

  /** Round 1: write_file + glob in parallel; round 2: read_file; round 3: text. */
  function scriptThreeRounds(fileContent: string) {
    t.provider.script(
      {
        content: 'Writing the note and looking around.',
        toolCalls: [
          { id: 'call_write_1', name: 'write_file', arguments: { path: 'notes/a.txt', content: fileContent } },
          { id: 'call_glob_1', name: 'glob', arguments: { pattern: 'seed/*.txt' } },
        ],
        usage: { prompt_tokens: 120, completion_tokens: 30 },
      },
      {
        toolCalls: [{ id: 'call_read_2', name: 'read_file', arguments: { path: 'notes/a.txt' } }],
        usage: { prompt_tokens: 200, completion_tokens: 15 },
      },
      {
        reasoning: 'The file matches what I wrote.',
        content: 'The note is written and reads back the same.',
        usage: { prompt_tokens: 260, completion_tokens: 12 },
      },
    );
  }

  it('streams every round in order and lists the activities', async () => {
    const { session, workspace } = await sessionWithSeedFiles();
    const client = await t.connect();
    scriptThreeRounds('hello e2e\n');

    const executionId = await startRun(t.userA, session.id, 'Write a note, then read it back.');
    const end = await client.waitForRunEvent('message_end', executionId);

    expect(end.data).toEqual({ prompt_tokens: 580, completion_tokens: 57, total_tokens: 637, executionId });
    expect(fs.readFileSync(path.join(workspace, 'notes', 'a.txt'), 'utf8')).toBe('hello e2e\n');

    const sessionEvents = client.events.filter((event) => event.sessionId === session.id);
    for (const event of sessionEvents) {
      expect(event).toEqual({ type: expect.any(String), sessionId: session.id, data: expect.any(Object), timestamp: expect.any(Number), seq: expect.any(Number) });
      expect(event.data.executionId).toBe(executionId);
    }
    const events = client.runEvents(executionId);
    expect(events).toHaveLength(sessionEvents.length);
    expect(events.at(-1)).toBe(end);
    expect(events.filter((event) => event.type === 'error')).toEqual([]);

    const text = events.filter((event) => event.type === 'content_delta').map((event) => event.data.delta).join('');
    expect(text).toBe('Writing the note and looking around.The note is written and reads back the same.');

    const starts = events.filter((event) => event.type === 'tool_call_start');
    expect(starts.map((event) => [event.data.tool_call_id, event.data.tool_name])).toEqual([
      ['call_write_1', 'write_file'],
      ['call_glob_1', 'glob'],
      ['call_read_2', 'read_file'],
    ]);
    const args = (id: string) =>
      events
        .filter((event) => (event.type === 'tool_call_start' || event.type === 'tool_call_args_delta') && event.data.tool_call_id === id)
        .map((event) => event.data.arguments)
        .join('');
    expect(JSON.parse(args('call_glob_1'))).toEqual({ pattern: 'seed/*.txt' });

    const results = events.filter((event) => event.type === 'tool_call_result');
    expect(results.map((event) => [event.data.tool_call_id, event.data.tool_name, event.data.status])).toEqual([
      ['call_write_1', 'write_file', 'success'],
      ['call_glob_1', 'glob', 'success'],
      ['call_read_2', 'read_file', 'success'],
    ]);
    expect(JSON.parse(String(results[0].data.result))).toEqual({ path: 'notes/a.txt', bytes: 10 });
    expect(JSON.parse(String(results[1].data.result))).toEqual({ files: ['seed/one.txt', 'seed/two.txt'], truncated: false });
    expect(String(results[2].data.result)).toContain('hello e2e');

    // Causal order: a call starts before its result; round 2 starts after round 1's results.
    const at = (event: WsEvent) => events.indexOf(event);
    const startOf = (id: string) => at(starts.find((event) => event.data.tool_call_id === id) as WsEvent);
    const resultOf = (id: string) => at(results.find((event) => event.data.tool_call_id === id) as WsEvent);
    expect(startOf('call_write_1')).toBeLessThan(resultOf('call_write_1'));
    expect(startOf('call_glob_1')).toBeLessThan(resultOf('call_glob_1'));
    expect(resultOf('call_glob_1')).toBeLessThan(startOf('call_read_2'));
    expect(startOf('call_read_2')).toBeLessThan(resultOf('call_read_2'));
    const lastDelta = events.map((event) => event.type).lastIndexOf('content_delta');
    expect(resultOf('call_read_2')).toBeLessThan(lastDelta);

    // Round 3 thinks before it answers: start, deltas, end, then the text.
    const thinking = events.filter((event) => event.type.startsWith('thinking_'));
    expect(thinking[0].type).toBe('thinking_start');
    expect(thinking.at(-1)?.type).toBe('thinking_end');
    expect(thinking.filter((event) => event.type === 'thinking_delta').map((event) => event.data.delta).join('')).toBe('The file matches what I wrote.');
    expect(at(thinking[0])).toBeGreaterThan(resultOf('call_read_2'));
    expect(at(thinking.at(-1) as WsEvent)).toBeLessThan(lastDelta);
    expect(events.filter((event) => event.type === 'thinking_start')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'thinking_end')).toHaveLength(1);

    const activityEvents = events.filter((event) => event.type === 'activity');
    expect(activityEvents.map((event) => event.data.status)).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
    // Each activity follows its own result.
    for (const [index, activity] of activityEvents.entries()) {
      expect(at(activity)).toBeGreaterThan(at(results[index]));
    }

    const activities = await t.userA.get(`/api/sessions/${session.id}/activities`);
    expect(activities.status).toBe(200);
    expect(activities.body).toEqual([
      expect.objectContaining({ toolCallId: 'call_write_1', toolName: 'write_file', type: 'file_write', target: 'notes/a.txt', status: 'SUCCESS' }),
      expect.objectContaining({ toolCallId: 'call_glob_1', toolName: 'glob', type: 'search', status: 'SUCCESS' }),
      expect.objectContaining({ toolCallId: 'call_read_2', toolName: 'read_file', type: 'file_read', target: 'notes/a.txt', status: 'SUCCESS' }),
    ]);
    expect(activities.body.map((activity: { id: number }) => activity.id)).toEqual(activityEvents.map((event) => event.data.id));
    for (const activity of activities.body) {
      expect(activity).toEqual(
        expect.objectContaining({ id: expect.any(Number), summary: expect.any(String), createdAt: expect.any(String) }),
      );
    }
  });

  it('stores exactly the messages the model is sent next', async () => {
    const { session } = await sessionWithSeedFiles();
    const client = await t.connect();
    // Text that re-serialisation, trimming or normalisation would change.
    const tricky = '  first line\r\nsecond\tline with "quotes", \\backslash\\ and ünïcødé 🚀  \n\n  trailing  \n';
    scriptThreeRounds(tricky);

    const firstRun = await startRun(t.userA, session.id, 'Write a tricky note.');
    await client.waitForRunEvent('message_end', firstRun);

    const stored = (await t.userA.get<StoredMessage[]>(`/api/sessions/${session.id}/messages`)).body;
    expect(stored.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant', 'tool', 'assistant']);
    expect(stored.at(-1)?.content).toBe('The note is written and reads back the same.');

    // The third request carried the whole first run so far: compare it field by field.
    const thirdRequest = t.provider.requests[2].body.messages;
    expect(thirdRequest[0].role).toBe('system');
    expect(thirdRequest.slice(1)).toHaveLength(6);
    expectSameConversation(stored.slice(0, 6), thirdRequest.slice(1));

    // Tool messages hold what WebSocket clients saw as the result, to the byte.
    const results = client.runEvents(firstRun).filter((event) => event.type === 'tool_call_result');
    const toolMessages = stored.filter((message) => message.role === 'tool');
    expect(toolMessages.map((message) => [message.toolCallId, message.content])).toEqual(
      results.map((event) => [event.data.tool_call_id, event.data.result]),
    );
    expect(toolMessages[2].content).toContain(tricky);
    expect(JSON.parse(stored[1].toolCalls?.[0].function.arguments ?? '')).toEqual({ path: 'notes/a.txt', content: tricky });

    // A second run reloads the conversation from the database; the model must get it unchanged.
    t.provider.script({ content: 'Nothing more to do.' });
    const secondRun = await startRun(t.userA, session.id, 'Anything else?');
    await client.waitForRunEvent('message_end', secondRun);
    const fourthRequest = t.provider.requests[3].body.messages;
    const afterSecondRun = (await t.userA.get<StoredMessage[]>(`/api/sessions/${session.id}/messages`)).body;
    expect(afterSecondRun).toHaveLength(9);
    expect(afterSecondRun.slice(0, 7)).toEqual(stored);
    expect(fourthRequest[0].role).toBe('system');
    expectSameConversation(afterSecondRun.slice(0, 8), fourthRequest.slice(1));
    expect(fourthRequest).toHaveLength(9);
  });
});

/** Stored messages and the provider's messages, position by position, exactly. */
function expectSameConversation(stored: StoredMessage[], sent: ProviderMessage[]): void {
  expect(sent).toHaveLength(stored.length);
  stored.forEach((message, index) => {
    const wire = sent[index];
    expect({ index, role: wire.role }).toEqual({ index, role: message.role });
    if (message.role === 'tool') {
      expect(wire.tool_call_id).toBe(message.toolCallId);
      expect(wire.content).toBe(message.content);
    } else if (message.role === 'assistant' && message.toolCalls) {
      expect(wire.tool_calls).toEqual(message.toolCalls);
      expect(wire.content).toBe(message.content);
    } else {
      expect(wire.content).toBe(message.content);
    }
  });
}
