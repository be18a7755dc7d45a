import { Gate } from './support/fake-openai-provider';
import { HttpClient } from './support/http-client';
import { createSession, startRun, startTestHarness, TOKEN_A, TOKEN_B, type TestHarness } from './support/test-harness';
import { withTimeout, WsTestClient, type WsEvent } from './support/ws-test-client';

describe('authentication', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  describe('when an HTTP request has no valid token', () => {
    // Three columns in every row: jest reads a missing one as a `done` callback.
    const requests: Array<[string, string, unknown]> = [
      ['GET', '/api/sessions/1', undefined],
      ['POST', '/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' }],
      ['PATCH', '/api/sessions/1', { permissionLevel: 'FULL' }],
      ['POST', '/api/sessions/1/messages', { content: 'hi' }],
      ['POST', '/api/sessions/1/cancel', undefined],
      ['GET', '/api/sessions/1/messages', undefined],
      ['GET', '/api/sessions/1/activities', undefined],
      ['GET', '/api/tools', undefined],
    ];

    it.each(requests)('answers %s %s with 401 without a token, with an unknown one and with a malformed header', async (method, route, body) => {
      const withHeader = (authorization: string) => new HttpClient(t.url, null).request(method, route, body, { authorization });
      const answers = [
        await t.anonymous.request(method, route, body),
        await new HttpClient(t.url, 'tok-unknown').request(method, route, body),
        await withHeader(`Basic ${TOKEN_A}`),
        await withHeader(`Bearer`),
        await withHeader(`Bearer ${TOKEN_A}x`),
      ];
      for (const answer of answers) {
        expect(answer.status).toBe(401);
        expect(answer.body).toEqual(expect.objectContaining({ message: expect.any(String) }));
      }
    });

    it('writes nothing for a rejected request', async () => {
      expect((await t.anonymous.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' })).status).toBe(401);
      expect((await new HttpClient(t.url, 'nope').post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' })).status).toBe(401);
      const created = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      expect(created.id).toBe(1);
    });
  });

  it('serves GET /health without a token', async () => {
    const health = await t.anonymous.get('/health');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
  });

  it('closes a WebSocket without a token or with an unknown one with code 4401', async () => {
    expect((await WsTestClient.connectAndAwaitClose(t.url, null)).code).toBe(4401);
    expect((await WsTestClient.connectAndAwaitClose(t.url, '')).code).toBe(4401);
    expect((await WsTestClient.connectAndAwaitClose(t.url, 'tok-unknown')).code).toBe(4401);
    expect((await WsTestClient.connectAndAwaitClose(t.url, `${TOKEN_A} `)).code).toBe(4401);
    // and a valid token connects
    const client = await t.connect(TOKEN_B);
    expect(client.isOpen).toBe(true);
  });

  it('keeps a rejected WebSocket out of the event stream', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    // The upgrade completes before the server closes the socket: it opens, then is closed.
    const rejected = await WsTestClient.connect(t.url, 'tok-unknown');
    const owner = await t.connect(TOKEN_A);
    t.provider.script({ content: 'secret answer' });
    const executionId = await startRun(t.userA, session.id, 'hello');
    await owner.waitForRunEvent('message_end', executionId);
    expect((await withTimeout(rejected.closed, 5_000, 'the rejected socket stayed open')).code).toBe(4401);
    expect(rejected.events).toEqual([]);
  });
});

describe('ownership', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  it("answers 404 to every call on another user's session and changes nothing", async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'READ_ONLY' });
    const missing = await t.userB.get('/api/sessions/999');
    expect(missing.status).toBe(404);

    const base = `/api/sessions/${session.id}`;
    const answers = {
      get: await t.userB.get(base),
      patch: await t.userB.patch(base, { permissionLevel: 'FULL' }),
      postMessage: await t.userB.post(`${base}/messages`, { content: 'let me in' }),
      cancel: await t.userB.post(`${base}/cancel`),
      messages: await t.userB.get(`${base}/messages`),
      activities: await t.userB.get(`${base}/activities`),
      tools: await t.userB.get(`/api/tools?sessionId=${session.id}`),
    };
    for (const [call, answer] of Object.entries(answers)) {
      expect({ call, status: answer.status }).toEqual({ call, status: 404 });
      // indistinguishable from a session that does not exist
      expect(answer.body.message).toBe(`Session ${session.id} not found`);
    }
    expect(missing.body.message).toBe('Session 999 not found');

    expect((await t.userA.get(base)).body.permissionLevel).toBe('READ_ONLY');
    expect((await t.userA.get(`${base}/messages`)).body).toEqual([]);
    expect(t.provider.requests).toHaveLength(0);
  });

  it("does not let another user cancel a run or read it", async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const owner = await t.connect(TOKEN_A);
    const stranger = await t.connect(TOKEN_B);
    const gate = new Gate();
    t.provider.script({ content: 'only for the owner', gate });
    const executionId = await startRun(t.userA, session.id, 'hello');
    await t.provider.waitForRequest(1);

    expect((await t.userB.post(`/api/sessions/${session.id}/cancel`)).status).toBe(404);
    const since = stranger.mark();
    stranger.send({ type: 'cancel', sessionId: session.id });
    const error = await stranger.waitFor((event) => event.type === 'error', { since });
    expect(error.data.message).toBe(`Session ${session.id} not found`);

    gate.release();
    const end = await owner.waitForRunEvent('message_end', executionId);
    expect(end.data.total_tokens).toBeGreaterThan(0);
    const messages = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    expect(messages.at(-1)).toEqual(expect.objectContaining({ role: 'assistant', content: 'only for the owner' }));
    expect(stranger.events.filter((event) => event.data.executionId === executionId)).toEqual([]);
  });

  it("rejects WebSocket answers for another user's session and the owner's run completes", async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'READ_WRITE' });
    const strangersOwn = await createSession(t.userB, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const owner = await t.connect(TOKEN_A);
    const stranger = await t.connect(TOKEN_B);
    t.provider.script(
      { toolCalls: [{ id: 'call_ask', name: 'ask_user_questions', arguments: { questions: [{ question: 'Which colour?', options: ['red', 'blue'] }] } }] },
      { toolCalls: [{ id: 'call_read', name: 'read_file', arguments: { path: 'desktop.txt' } }] },
      { content: 'All done.' },
    );
    const executionId = await startRun(t.userA, session.id, 'Ask me, then read my file.');

    const strangerSays = async (frame: Record<string, unknown>): Promise<WsEvent> => {
      const since = stranger.mark();
      stranger.send(frame);
      return stranger.waitFor((event) => event.type === 'error', { since });
    };

    const questions = await owner.waitForRunEvent('ask_user_questions', executionId);
    const askId = String(questions.data.requestId);
    expect(questions.data.questions).toEqual([{ question: 'Which colour?', options: ['red', 'blue'] }]);
    const notFound = `Session ${session.id} not found`;
    expect((await strangerSays({ type: 'ask_user_answer', sessionId: session.id, requestId: askId, answers: { 0: 'red' } })).data.message).toBe(notFound);
    expect((await strangerSays({ type: 'tool_response', sessionId: session.id, requestId: askId, result: 'x' })).data.message).toBe(notFound);
    expect((await strangerSays({ type: 'cancel', sessionId: session.id })).data.message).toBe(notFound);
    // naming their own session does not reach the owner's pending request either
    expect((await strangerSays({ type: 'ask_user_answer', sessionId: strangersOwn.id, requestId: askId, answers: { 0: 'red' } })).data.message)
      .toContain(askId);
    owner.send({ type: 'ask_user_answer', sessionId: session.id, requestId: askId, answers: { 0: 'blue' } });

    const toolRequest = await owner.waitForRunEvent('tool_request', executionId);
    const toolId = String(toolRequest.data.requestId);
    expect((await strangerSays({ type: 'tool_response', sessionId: session.id, requestId: toolId, result: 'forged' })).data.message).toBe(notFound);
    expect((await strangerSays({ type: 'tool_response', sessionId: strangersOwn.id, requestId: toolId, result: 'forged' })).data.message)
      .toContain(toolId);
    owner.send({ type: 'tool_response', sessionId: session.id, requestId: toolId, result: 'contents from the desktop' });

    await owner.waitForRunEvent('message_end', executionId);
    const results = owner.runEvents(executionId).filter((event) => event.type === 'tool_call_result');
    expect(results.map((event) => [event.data.tool_call_id, event.data.result])).toEqual([
      ['call_ask', JSON.stringify({ answers: { 0: 'blue' } })],
      ['call_read', 'contents from the desktop'],
    ]);
    const lastRequest = t.provider.requests[2].body.messages;
    expect(lastRequest.filter((message) => message.role === 'tool').map((message) => message.content)).toEqual([
      JSON.stringify({ answers: { 0: 'blue' } }),
      'contents from the desktop',
    ]);
    expect(owner.runEvents(executionId).filter((event) => event.type === 'error')).toEqual([]);
    expect(stranger.events.filter((event) => event.type !== 'error')).toEqual([]);
    expect(stranger.isOpen).toBe(true);
  });
});
