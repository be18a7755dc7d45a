import * as fs from 'node:fs';
import * as path from 'node:path';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';
import type { WsEvent } from './support/ws-test-client';

const REJECTED = JSON.stringify({ error: 'User rejected the tool call' });

describe('LOCAL mode with approval', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  it('asks the desktop, passes its answers to the model verbatim, and applies a level changed mid-run', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'READ_ONLY', workspace: 'desk' });
    const client = await t.connect();
    const writeArgs = '{"path": "a.txt", "content": "one"}';
    t.provider.script(
      {
        toolCalls: [
          { id: 'call_write_1', name: 'write_file', arguments: writeArgs },
          { id: 'call_read_1', name: 'read_file', arguments: { path: 'a.txt' } },
        ],
      },
      { toolCalls: [{ id: 'call_write_2', name: 'write_file', arguments: { path: 'a.txt', content: 'two' } }] },
      { toolCalls: [{ id: 'call_write_3', name: 'write_file', arguments: { path: 'b.txt', content: 'three' } }] },
      { content: 'Done on your desktop.' },
    );
    const executionId = await startRun(t.userA, session.id, 'Write a.txt on my machine.');
    const toolRequest = (toolName: string, since: number) =>
      client.waitFor((event) => event.type === 'tool_request' && event.data.executionId === executionId && event.data.toolName === toolName, { since });
    const answer = (request: WsEvent, result: string) =>
      client.send({ type: 'tool_response', sessionId: session.id, requestId: request.data.requestId, result });

    // Round 1: the write needs approval at READ_ONLY, the read does not — and the read, after a
    // write in the same round, is sent only once the write is answered.
    const write1 = await toolRequest('write_file', 0);
    await client.roundTrip();
    expect(client.events.some((event) => event.type === 'tool_request' && event.data.toolName === 'read_file')).toBe(false);
    answer(write1, REJECTED);
    const read1 = await toolRequest('read_file', 0);
    expect(write1.sessionId).toBe(session.id);
    expect(write1.data).toEqual({
      requestId: expect.any(String),
      toolName: 'write_file',
      arguments: writeArgs,
      workspace: 'desk',
      needApproval: true,
      dangerReason: expect.stringMatching(/\S/),
      executionId,
    });
    expect(read1.data).toEqual(expect.objectContaining({ toolName: 'read_file', needApproval: false, dangerReason: null }));
    const sinceRound2 = client.mark();
    answer(read1, 'one\n');

    // Round 2: the model sees the rejection exactly; this time the user approves, after raising the level.
    const second = await t.provider.waitForRequest(2);
    const toolMessages = second.body.messages.filter((message) => message.role === 'tool');
    expect(toolMessages).toEqual([
      { role: 'tool', tool_call_id: 'call_write_1', content: REJECTED },
      { role: 'tool', tool_call_id: 'call_read_1', content: 'one\n' },
    ]);
    const write2 = await toolRequest('write_file', sinceRound2);
    expect(write2.data).toEqual(expect.objectContaining({ needApproval: true, dangerReason: expect.any(String) }));
    const patched = await t.userA.patch(`/api/sessions/${session.id}`, { permissionLevel: 'FULL' });
    expect(patched.status).toBe(200);
    expect(patched.body.permissionLevel).toBe('FULL');
    const sinceRound3 = client.mark();
    const approvedResult = JSON.stringify({ path: 'a.txt', bytes: 3 });
    answer(write2, approvedResult);

    // Round 3: the new level holds for the next call of the same run.
    const third = await t.provider.waitForRequest(3);
    expect(third.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_write_2', content: approvedResult });
    const write3 = await toolRequest('write_file', sinceRound3);
    expect(write3.data).toEqual(expect.objectContaining({ needApproval: false, dangerReason: null }));
    answer(write3, JSON.stringify({ path: 'b.txt', bytes: 5 }));

    await client.waitForRunEvent('message_end', executionId);
    const results = client.runEvents(executionId).filter((event) => event.type === 'tool_call_result');
    expect(results.map((event) => [event.data.tool_call_id, event.data.status, event.data.result])).toEqual([
      ['call_write_1', 'error', REJECTED],
      ['call_read_1', 'success', 'one\n'],
      ['call_write_2', 'success', approvedResult],
      ['call_write_3', 'success', JSON.stringify({ path: 'b.txt', bytes: 5 })],
    ]);
    const activities = (await t.userA.get(`/api/sessions/${session.id}/activities`)).body;
    expect(activities.map((activity: { toolCallId: string; status: string }) => [activity.toolCallId, activity.status])).toEqual([
      ['call_write_1', 'ERROR'],
      ['call_read_1', 'SUCCESS'],
      ['call_write_2', 'SUCCESS'],
      ['call_write_3', 'SUCCESS'],
    ]);
    // The tools ran on the desktop: the server's workspace was not touched.
    expect(fs.readdirSync(path.join(t.workspaceRoot, 'user-1', 'desk'))).toEqual([]);
  });

  it('sends the request to every desktop client of the owner; the first answer wins', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'READ_ONLY' });
    const laptop = await t.connect();
    const desktop = await t.connect();
    t.provider.script({ toolCalls: [{ id: 'call_edit', name: 'edit_file', arguments: { path: 'a.txt', old_string: 'a', new_string: 'b' } }] }, { content: 'ok' });
    const executionId = await startRun(t.userA, session.id, 'edit it');
    const onLaptop = await laptop.waitForRunEvent('tool_request', executionId);
    const onDesktop = await desktop.waitForRunEvent('tool_request', executionId);
    expect(onDesktop.data).toEqual(onLaptop.data);
    expect(onLaptop.data.needApproval).toBe(true);

    desktop.send({ type: 'tool_response', sessionId: session.id, requestId: onDesktop.data.requestId, result: 'approved on the desktop' });
    await desktop.waitForRunEvent('message_end', executionId);
    // The laptop is told to close its approval prompt; the desktop, which answered, is not.
    const withdrawn = await laptop.waitForRunEvent('tool_request_cancelled', executionId);
    expect(withdrawn.data).toEqual({ requestId: onLaptop.data.requestId, reason: 'answered by another client', executionId });
    expect(desktop.runEvents(executionId).filter((event) => event.type === 'tool_request_cancelled')).toEqual([]);
    const since = laptop.mark();
    laptop.send({ type: 'tool_response', sessionId: session.id, requestId: onLaptop.data.requestId, result: 'rejected on the laptop' });
    const error = await laptop.waitFor((event) => event.type === 'error', { since });
    expect(error.data.message).toContain('No pending tool request');
    expect(t.provider.requests[1].body.messages.at(-1)?.content).toBe('approved on the desktop');
  });
});
