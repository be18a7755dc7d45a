import { Gate } from './support/fake-openai-provider';
import { RunService } from '../src/session/run/run.service';
import { StreamingWsRegistry } from '../src/session/ws/streaming-ws-registry';
import { createSession, startRun, startTestHarness, waitUntil, type TestHarness } from './support/test-harness';

describe('a client that disconnects mid-run', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  /** How many WebSocket connections of user 1 the server holds. */
  const connectionsOfUser1 = () => t.harness.app.get(StreamingWsRegistry).connectionCount(1);

  it('does not stop the run; the stored messages are complete and a new client reads them', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const first = await t.connect();
    const firstRound = new Gate();
    const lastRound = new Gate();
    t.provider.script(
      { content: 'Starting.', toolCalls: [{ id: 'call_w', name: 'write_file', arguments: { path: 'out.txt', content: 'kept' } }], gate: firstRound },
      { toolCalls: [{ id: 'call_r', name: 'read_file', arguments: { path: 'out.txt' } }] },
      { content: 'Finished without an audience.', gate: lastRound },
    );
    const executionId = await startRun(t.userA, session.id, 'Work while I am away.');
    await first.waitForRunEvent('content_delta', executionId);

    await first.close();
    await waitUntil(() => connectionsOfUser1() === 0, 'the server dropped the connection');
    firstRound.release();

    // Round 3 is only requested if rounds 1 and 2 and their tools ran with nobody listening.
    const third = await t.provider.waitForRequest(3);
    expect(third.body.messages.filter((message) => message.role === 'tool').map((message) => message.tool_call_id)).toEqual(['call_w', 'call_r']);

    const second = await t.connect();
    lastRound.release();
    const end = await second.waitForRunEvent('message_end', executionId);
    expect(end.sessionId).toBe(session.id);
    // The reconnected client sees only what happened after it connected.
    expect(second.runEvents(executionId).some((event) => event.type === 'tool_call_start')).toBe(false);

    const messages = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    expect(messages.map((message: { role: string; content: string | null }) => [message.role, message.content])).toEqual([
      ['user', 'Work while I am away.'],
      ['assistant', 'Starting.'],
      ['tool', JSON.stringify({ path: 'out.txt', bytes: 4 })],
      ['assistant', null],
      ['tool', expect.stringContaining('kept')],
      ['assistant', 'Finished without an audience.'],
    ]);
    const activities = (await t.userA.get(`/api/sessions/${session.id}/activities`)).body;
    expect(activities.map((activity: { toolCallId: string; status: string }) => [activity.toolCallId, activity.status])).toEqual([
      ['call_w', 'SUCCESS'],
      ['call_r', 'SUCCESS'],
    ]);
  });

  it('answers a LOCAL tool request whose only client left with an error result instead of hanging', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script(
      { toolCalls: [{ id: 'call_desk', name: 'read_file', arguments: { path: 'notes.txt' } }] },
      { content: 'The desktop went away.' },
    );
    const executionId = await startRun(t.userA, session.id, 'Read my notes.');
    await client.waitForRunEvent('tool_request', executionId);
    await client.close();

    const second = await t.provider.waitForRequest(2);
    const toolMessage = second.body.messages.at(-1);
    expect(toolMessage?.role).toBe('tool');
    expect(toolMessage?.tool_call_id).toBe('call_desk');
    const content = JSON.parse(String(toolMessage?.content)) as { error?: unknown };
    expect(content.error).toEqual(expect.stringContaining('disconnected'));

    // No client is left to receive message_end: ask the server when the run is over.
    await t.harness.app.get(RunService).whenIdle(session.id);
    const messages = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    expect(messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[2].content).toBe(toolMessage?.content);
    const activities = (await t.userA.get(`/api/sessions/${session.id}/activities`)).body;
    expect(activities).toEqual([expect.objectContaining({ toolCallId: 'call_desk', status: 'ERROR' })]);
  });

  it('stops waiting for answers to questions once every client that showed them has left', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const phone = await t.connect();
    const laptop = await t.connect();
    t.provider.script(
      { toolCalls: [{ id: 'call_ask', name: 'ask_user_questions', arguments: { questions: [{ question: 'Deploy now?' }] } }] },
      { content: 'I will ask again later.' },
    );
    const executionId = await startRun(t.userA, session.id, 'Deploy when I say so.');
    await phone.waitForRunEvent('ask_user_questions', executionId);
    await laptop.waitForRunEvent('ask_user_questions', executionId);

    // One client leaving is not enough: the other can still answer.
    await phone.close();
    await new Promise<void>((resolve) => setTimeout(resolve, 50));
    expect(t.provider.requests).toHaveLength(1);

    await laptop.close();
    const second = await t.provider.waitForRequest(2);
    const toolMessage = second.body.messages.at(-1);
    expect(toolMessage?.tool_call_id).toBe('call_ask');
    expect(JSON.parse(String(toolMessage?.content))).toEqual({
      error: 'The questions were not answered: The questions were cancelled: the client disconnected before answering',
    });
    await t.harness.app.get(RunService).whenIdle(session.id);
    const activities = (await t.userA.get(`/api/sessions/${session.id}/activities`)).body;
    expect(activities).toEqual([expect.objectContaining({ toolCallId: 'call_ask', status: 'ERROR' })]);
  });

  it('answers a LOCAL tool call with an error when no client is connected at all', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'FULL' });
    t.provider.script(
      { toolCalls: [{ id: 'call_nobody', name: 'glob', arguments: { pattern: '*' } }] },
      { content: 'Nobody is there.' },
    );
    await startRun(t.userA, session.id, 'List my files.');
    const second = await t.provider.waitForRequest(2);
    const content = JSON.parse(String(second.body.messages.at(-1)?.content)) as { error?: unknown };
    expect(content.error).toEqual(expect.stringContaining('No connected desktop client'));
  });
});
