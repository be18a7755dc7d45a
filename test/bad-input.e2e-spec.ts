import { rawBody } from './support/http-client';
import { createSession, startTestHarness, type TestHarness } from './support/test-harness';

describe('bad HTTP input', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  const validSession = { executionMode: 'CLOUD', permissionLevel: 'READ_WRITE' };

  // [what is wrong, body, text the message must contain]
  const badSessions: Array<[string, unknown, string]> = [
    ['malformed JSON', rawBody('{"executionMode": "CLOUD", '), 'body: not valid JSON'],
    ['a JSON string instead of an object', rawBody('"CLOUD"'), 'body: not valid JSON'],
    ['a JSON array instead of an object', rawBody('[]'), 'executionMode'],
    ['an unknown execution mode', { ...validSession, executionMode: 'HYBRID' }, 'executionMode'],
    ['an unknown permission level', { ...validSession, permissionLevel: 'ROOT' }, 'permissionLevel'],
    ['a permission level in lower case', { ...validSession, permissionLevel: 'full' }, 'permissionLevel'],
    ['a missing permission level', { executionMode: 'CLOUD' }, 'permissionLevel'],
    ['tools as a string', { ...validSession, tools: 'read_file' }, 'tools'],
    ['tools holding a number', { ...validSession, tools: ['read_file', 7] }, 'tools'],
    ['an unknown tool', { ...validSession, tools: ['read_file', 'format_disk'] }, 'tools[1]'],
    ['mcpServers holding a string', { ...validSession, mcpServers: ['1'] }, 'mcpServers'],
    ['an MCP server that is not configured', { ...validSession, mcpServers: [7] }, 'mcpServers[0]'],
    ['a workspace of the wrong type', { ...validSession, workspace: 42 }, 'workspace'],
    ['a workspace that climbs out', { ...validSession, workspace: '../escape' }, 'workspace'],
    ['an unknown field', { ...validSession, admin: true }, 'admin'],
  ];

  it.each(badSessions)('rejects a session with %s, naming the field, and stores nothing', async (_label, body, field) => {
    const first = await createSession(t.userA, validSession);
    const answer = await t.userA.post('/api/sessions', body);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(expect.objectContaining({ message: expect.any(String) }));
    expect(answer.body.message).toContain(field);
    // Nothing was written: the next session gets the next id.
    const next = await createSession(t.userA, validSession);
    expect(next.id).toBe(first.id + 1);
  });

  const badUpdates: Array<[string, unknown, string]> = [
    ['malformed JSON', rawBody('{"permissionLevel": '), 'body: not valid JSON'],
    ['an unknown permission level', { permissionLevel: 'GOD_MODE' }, 'permissionLevel'],
    ['a number as the level', { permissionLevel: 3 }, 'permissionLevel'],
    ['no level', {}, 'permissionLevel'],
    ['an unknown field', { permissionLevel: 'FULL', executionMode: 'LOCAL' }, 'executionMode'],
  ];

  it.each(badUpdates)('rejects a PATCH with %s and keeps the session as it was', async (_label, body, field) => {
    const session = await createSession(t.userA, validSession);
    const answer = await t.userA.patch(`/api/sessions/${session.id}`, body);
    expect(answer.status).toBe(400);
    expect(answer.body.message).toContain(field);
    const after = await t.userA.get(`/api/sessions/${session.id}`);
    expect(after.body).toEqual(session);
  });

  const badMessages: Array<[string, unknown, string]> = [
    ['malformed JSON', rawBody('{"content": "hi'), 'body: not valid JSON'],
    ['no content', {}, 'content'],
    ['content of the wrong type', { content: 42 }, 'content'],
    ['empty content', { content: '' }, 'content'],
    ['an unknown field', { content: 'hi', role: 'system' }, 'role'],
  ];

  it.each(badMessages)('rejects a message with %s and starts no run', async (_label, body, field) => {
    const session = await createSession(t.userA, validSession);
    const answer = await t.userA.post(`/api/sessions/${session.id}/messages`, body);
    expect(answer.status).toBe(400);
    expect(answer.body.message).toContain(field);
    expect((await t.userA.get(`/api/sessions/${session.id}/messages`)).body).toEqual([]);
    expect(t.provider.requests).toHaveLength(0);
    // and the session is free for a good message afterwards
    t.provider.script({ content: 'ok' });
    expect((await t.userA.post(`/api/sessions/${session.id}/messages`, { content: 'hi' })).status).toBe(202);
  });

  it('accepts a long message and answers a body over the limit with 413 naming the body', async () => {
    const session = await createSession(t.userA, validSession);
    t.provider.script({ content: 'read it all' });
    const long = 'ä'.repeat(300_000);
    expect((await t.userA.post(`/api/sessions/${session.id}/messages`, { content: long })).status).toBe(202);
    await t.provider.waitForRequest(1);
    // compared as a boolean: a failure must not print 300 000 characters
    expect(t.provider.requests[0].body.messages.at(-1)?.content === long).toBe(true);

    const huge = await t.userA.post(`/api/sessions/${session.id}/messages`, { content: 'x'.repeat(9 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(huge.body.message).toContain('body');
  });

  it('rejects a session id that is not a number as absent and a bad sessionId query as bad input', async () => {
    expect((await t.userA.get('/api/sessions/abc')).status).toBe(404);
    expect((await t.userA.get('/api/sessions/1.5/messages')).status).toBe(404);
    const tools = await t.userA.get('/api/tools?sessionId=abc');
    expect(tools.status).toBe(400);
    expect(tools.body.message).toEqual(expect.any(String));
  });
});
