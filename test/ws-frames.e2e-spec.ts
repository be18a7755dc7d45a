import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';
import type { WsTestClient } from './support/ws-test-client';

describe('bad WebSocket frames', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  /** Sends one frame and returns the `error` event it caused (and only it). */
  async function errorFor(client: WsTestClient, frame: unknown): Promise<{ message: string; sessionId: number | null }> {
    const since = client.mark();
    client.send(frame);
    const event = await client.waitFor((candidate) => candidate.type === 'error', { since });
    expect(Object.keys(event).sort()).toEqual(['data', 'sessionId', 'timestamp', 'type']);
    return { message: String(event.data.message), sessionId: event.sessionId };
  }

  it('answers each unusable frame with an error naming the problem and keeps the connection', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    // [frame, text the error must contain]
    const frames: Array<[unknown, string]> = [
      ['this is not json', 'not valid JSON'],
      ['{"type": "cancel", ', 'not valid JSON'],
      [Buffer.from([0xff, 0x00, 0xfe]), 'not valid JSON'],
      ['', 'not valid JSON'],
      ['[1, 2, 3]', 'JSON object'],
      ['42', 'JSON object'],
      ['null', 'JSON object'],
      [{ sessionId: session.id }, "'type'"],
      [{ type: 7 }, "'type'"],
      [{ type: 'subscribe_all', sessionId: session.id }, "Unknown frame type 'subscribe_all'"],
      [{ type: 'subscribe' }, "'sessionId'"],
      [{ type: 'subscribe', sessionId: session.id, after: -1 }, "'after'"],
      [{ type: 'subscribe', sessionId: 999 }, 'Session 999 not found'],
      [{ type: 'unsubscribe', sessionId: 999 }, 'Session 999 not found'],
      [{ type: '__proto__' }, "Unknown frame type '__proto__'"],
      [{ type: 'cancel' }, "'sessionId'"],
      [{ type: 'cancel', sessionId: String(session.id) }, "'sessionId'"],
      [{ type: 'cancel', sessionId: 1.5 }, "'sessionId'"],
      [{ type: 'tool_response', requestId: 'r1', result: 'x' }, "'sessionId'"],
      [{ type: 'tool_response', sessionId: session.id, result: 'x' }, "'requestId'"],
      [{ type: 'tool_response', sessionId: session.id, requestId: 'r1' }, "'result'"],
      [{ type: 'tool_response', sessionId: session.id, requestId: 'r1', result: { ok: true } }, "'result'"],
      [{ type: 'tool_response', sessionId: session.id, requestId: 'r1', result: 'x' }, "No pending tool request 'r1'"],
      [{ type: 'ask_user_answer', sessionId: session.id, answers: {} }, "'requestId'"],
      [{ type: 'ask_user_answer', sessionId: session.id, requestId: 'q1' }, "'answers'"],
      [{ type: 'ask_user_answer', sessionId: session.id, requestId: 'q1', answers: {} }, "No pending questions 'q1'"],
      [{ type: 'cancel', sessionId: 999 }, 'Session 999 not found'],
      // Measured before parsing, like request bodies: no frame can hold the server.
      [`{"type":"cancel","sessionId":1,"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}`, 'Frame refused'],
      [JSON.stringify({ type: 'cancel', sessionId: session.id, ...Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 0])) }), 'Frame refused'],
      ['{"type":"cancel","sessionId":1,"__proto__":{"polluted":true}}', "key '__proto__' is not allowed"],
    ];
    for (const [frame, expected] of frames) {
      const error = await errorFor(client, frame);
      expect({ frame, message: error.message }).toEqual({ frame, message: expect.stringContaining(expected) });
      expect(client.isOpen).toBe(true);
    }

    // The same connection still carries a run.
    t.provider.script({ content: 'still here' });
    const executionId = await startRun(t.userA, session.id, 'are you there?');
    await client.waitForRunEvent('message_end', executionId);
    const text = client.runEvents(executionId).filter((event) => event.type === 'content_delta').map((event) => event.data.delta);
    expect(text.join('')).toBe('still here');
    expect(client.unparsed).toEqual([]);
  });

  it('leaves a pending tool request alone when a frame for it is unusable', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script(
      { toolCalls: [{ id: 'call_local', name: 'read_file', arguments: { path: 'a.txt' } }] },
      { content: 'got it' },
    );
    const executionId = await startRun(t.userA, session.id, 'read a.txt');
    const request = await client.waitForRunEvent('tool_request', executionId);
    const requestId = String(request.data.requestId);

    expect((await errorFor(client, { type: 'tool_response', sessionId: session.id, requestId })).message).toContain("'result'");
    expect((await errorFor(client, { type: 'tool_response', sessionId: session.id, requestId, result: 17 })).message).toContain("'result'");
    expect((await errorFor(client, `{"type":"tool_response","sessionId":${session.id},"requestId":"${requestId}","result":"trunc`)).message)
      .toContain('not valid JSON');
    expect((await errorFor(client, { type: 'tool_response', sessionId: session.id + 1, requestId, result: 'wrong session' })).message)
      .toContain('not found');

    client.send({ type: 'tool_response', sessionId: session.id, requestId, result: 'the real contents' });
    await client.waitForRunEvent('message_end', executionId);
    const result = client.runEvents(executionId).find((event) => event.type === 'tool_call_result');
    expect(result?.data.result).toBe('the real contents');
    const secondRequest = t.provider.requests[1].body.messages;
    expect(secondRequest.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_local', content: 'the real contents' });

    // A second answer to the finished request changes nothing either.
    expect((await errorFor(client, { type: 'tool_response', sessionId: session.id, requestId, result: 'late' })).message)
      .toContain(`No pending tool request '${requestId}'`);
    const stored = (await t.userA.get(`/api/sessions/${session.id}/messages`)).body;
    expect(stored.filter((message: { role: string }) => message.role === 'tool').map((message: { content: string }) => message.content))
      .toEqual(['the real contents']);
  });
});
