import { Gate } from './support/fake-openai-provider';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';

describe('one run per session, and cancelling it', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  it('answers 409 to a message while a run is active and stores nothing for it', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const other = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    const gate = new Gate();
    t.provider.script({ content: 'Thinking slowly.', gate });
    const executionId = await startRun(t.userA, session.id, 'first');
    await t.provider.waitForRequest(1);

    const conflict = await t.userA.post(`/api/sessions/${session.id}/messages`, { content: 'second' });
    expect(conflict.status).toBe(409);
    expect(conflict.body.message).toContain(executionId);
    // Another session of the same user is not blocked.
    t.provider.script({ content: 'other session answer' });
    const otherRun = await startRun(t.userA, other.id, 'in parallel');
    await client.waitForRunEvent('message_end', otherRun);

    gate.release();
    await client.waitForRunEvent('message_end', executionId);
    const messages = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    expect(messages.map((message: { role: string; content: string }) => [message.role, message.content])).toEqual([
      ['user', 'first'],
      ['assistant', 'Thinking slowly.'],
    ]);
    // Once the run has ended, the session takes the next message.
    t.provider.script({ content: 'now' });
    const next = await startRun(t.userA, session.id, 'second, later');
    await client.waitForRunEvent('message_end', next);
  });

  it('cancels a run over HTTP: the model call is aborted, the run ends, the session is free again', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script({ content: 'I will never finish', gate: new Gate() });
    const executionId = await startRun(t.userA, session.id, 'take forever');
    const request = await t.provider.waitForRequest(1);
    await client.waitForRunEvent('content_delta', executionId);

    const cancelled = await t.userA.post(`/api/sessions/${session.id}/cancel`);
    expect(cancelled.status).toBe(202);
    await client.waitForRunEvent('message_end', executionId);
    await request.closed;
    expect(client.runEvents(executionId).filter((event) => event.type === 'error')).toEqual([]);

    const messages = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    // What the user already saw stays in the conversation.
    expect(messages.map((message: { role: string; content: string }) => [message.role, message.content])).toEqual([
      ['user', 'take forever'],
      ['assistant', 'I will never finish'],
    ]);
    t.provider.script({ content: 'fresh start' });
    const next = await startRun(t.userA, session.id, 'again');
    await client.waitForRunEvent('message_end', next);
    expect(t.provider.requests).toHaveLength(2);
  });

  it('cancels a run with a WebSocket cancel frame, also while a tool waits for the desktop', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script({ toolCalls: [{ id: 'call_wait', name: 'read_file', arguments: { path: 'x.txt' } }] });
    const executionId = await startRun(t.userA, session.id, 'read and wait');
    const toolRequest = await client.waitForRunEvent('tool_request', executionId);

    const since = client.mark();
    client.send({ type: 'cancel', sessionId: session.id });
    await client.waitForRunEvent('message_end', executionId);
    expect(client.events.slice(since).filter((event) => event.type === 'error')).toEqual([]);
    // The model is not called again after the cancel.
    expect(t.provider.requests).toHaveLength(1);

    const messages = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    expect(messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(messages[2].toolCallId).toBe('call_wait');
    expect(typeof messages[2].content).toBe('string');

    // The desktop's late answer finds nothing to complete.
    const late = client.mark();
    client.send({ type: 'tool_response', sessionId: session.id, requestId: toolRequest.data.requestId, result: 'too late' });
    const error = await client.waitFor((event) => event.type === 'error', { since: late });
    expect(error.data.message).toContain('No pending tool request');
    const after = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    expect(after).toEqual(messages);
  });

  it('tells the desktop that a cancelled tool request is withdrawn', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'READ_ONLY' });
    const client = await t.connect();
    t.provider.script({ toolCalls: [{ id: 'call_write', name: 'write_file', arguments: { path: 'a.txt', content: 'x' } }] });
    const executionId = await startRun(t.userA, session.id, 'write and wait');
    const toolRequest = await client.waitForRunEvent('tool_request', executionId);
    expect(toolRequest.data.needApproval).toBe(true);

    expect((await t.userA.post(`/api/sessions/${session.id}/cancel`)).status).toBe(202);
    const withdrawn = await client.waitForRunEvent('tool_request_cancelled', executionId);
    expect(withdrawn.sessionId).toBe(session.id);
    expect(withdrawn.data).toEqual({ requestId: toolRequest.data.requestId, reason: 'the run was cancelled', executionId });
    await client.waitForRunEvent('message_end', executionId);
  });

  it('never sends a call whose approval was still being assessed when the run was cancelled', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'SMART' });
    const client = await t.connect();
    const assessment = new Gate();
    t.provider.script(
      { toolCalls: [{ id: 'call_shell', name: 'shell', arguments: { command: 'ls' } }] },
      // The danger assessor's model call for `ls`, held until the run has been cancelled.
      { content: '{"dangerous": false, "reason": "lists files"}', gate: assessment },
    );
    const executionId = await startRun(t.userA, session.id, 'list files');
    const assessing = await t.provider.waitForRequest(2);

    expect((await t.userA.post(`/api/sessions/${session.id}/cancel`)).status).toBe(202);
    await client.waitForRunEvent('message_end', executionId);
    // The next run starts before the old call's assessment comes back.
    t.provider.script({ toolCalls: [{ id: 'call_read', name: 'read_file', arguments: { path: 'a.txt' } }] });
    const next = await startRun(t.userA, session.id, 'read a file');
    const nextRequest = await client.waitForRunEvent('tool_request', next);
    expect(nextRequest.data.toolName).toBe('read_file');

    assessment.release();
    await assessing.closed;
    // Give the assessed call every chance to go out: a few turns of the event loop and a round trip.
    for (let turn = 0; turn < 20; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
    expect((await t.userA.get(`/api/sessions/${session.id}`)).status).toBe(200);
    expect(client.events.filter((event) => event.type === 'tool_request' && event.data.toolName === 'shell')).toEqual([]);
    const messages = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body as Array<{ role: string; toolCallId?: string }>;
    expect(messages.filter((message) => message.role === 'tool').map((message) => message.toolCallId)).toEqual(['call_shell']);
    client.send({ type: 'tool_response', sessionId: session.id, requestId: nextRequest.data.requestId, result: 'contents' });
  });

  it('withdraws pending questions on cancel and tells the client', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script({ toolCalls: [{ id: 'call_ask', name: 'ask_user_questions', arguments: { questions: [{ question: 'Proceed?' }] } }] });
    const executionId = await startRun(t.userA, session.id, 'ask me');
    const questions = await client.waitForRunEvent('ask_user_questions', executionId);

    expect((await t.userA.post(`/api/sessions/${session.id}/cancel`)).status).toBe(202);
    const withdrawn = await client.waitForRunEvent('ask_user_questions_cancelled', executionId);
    expect(withdrawn.data.requestId).toBe(questions.data.requestId);
    await client.waitForRunEvent('message_end', executionId);
    expect(t.provider.requests).toHaveLength(1);
  });

  it('reports a failing model as an error event of the run and frees the session', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    // No round scripted: the fake provider answers 400.
    const executionId = await startRun(t.userA, session.id, 'fail please');
    const error = await client.waitForRunEvent('error', executionId);
    expect(error.sessionId).toBe(session.id);
    expect(error.data.message).toContain('no round scripted');
    expect(client.runEvents(executionId).some((event) => event.type === 'message_end')).toBe(false);

    t.provider.script({ content: 'better now' });
    const next = await startRun(t.userA, session.id, 'try again');
    await client.waitForRunEvent('message_end', next);
    const messages = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    expect(messages.map((message: { role: string; content: string }) => [message.role, message.content])).toEqual([
      ['user', 'fail please'],
      ['user', 'try again'],
      ['assistant', 'better now'],
    ]);
  });

  it('accepts a cancel when nothing runs', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const cancelled = await t.userA.post(`/api/sessions/${session.id}/cancel`);
    expect(cancelled.status).toBe(202);
  });
});
