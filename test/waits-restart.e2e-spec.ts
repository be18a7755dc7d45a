import type Database from 'better-sqlite3';
import * as fs from 'node:fs';
import type { FakeOpenAiProvider, ScriptedRound } from './support/fake-openai-provider';
import type { HttpClient } from './support/http-client';
import { openAiConversationProblem } from './support/openai-conversation-rules';
import { RestartableServer } from './support/restartable-server';
import { waitUntil } from './support/server-process';
import type { WsTestClient, WsEvent } from './support/ws-test-client';

const TOKEN = 'waits-token';
const OTHER_TOKEN = 'waits-other-token';

/** One kind of wait for a person: the session it happens in, the model's rounds, and how a client answers it. */
interface WaitCase {
  kind: 'approval' | 'question' | 'local_tool';
  eventType: string;
  session: Record<string, unknown>;
  env: Record<string, string>;
  rounds: () => ScriptedRound[];
  answer: (client: WsTestClient, sessionId: number, request: WsEvent) => void;
}

const APPROVAL: WaitCase = {
  kind: 'approval',
  eventType: 'approval_request',
  session: { executionMode: 'CLOUD', permissionLevel: 'READ_WRITE' },
  env: { HARNESS_CLOUD_SHELL: 'on', HARNESS_SHELL_ISOLATION: 'none' },
  rounds: () => [
    {
      toolCalls: [
        // Runs unasked at READ_WRITE and finishes before the stop: its stored result must stand.
        { id: 'call_write', name: 'write_file', arguments: { path: 'note.txt', content: 'before the stop' } },
        { id: 'call_shell', name: 'shell', arguments: { command: 'cat note.txt; echo " and after" > proof.txt' } },
        // Queued behind the shell call, so it never started before the stop: it runs on resume
        // and reads what the approved call wrote.
        { id: 'call_read', name: 'read_file', arguments: { path: 'proof.txt' } },
      ],
    },
    { content: 'All done.' },
  ],
  answer: (client, sessionId, request) => client.send({ type: 'approval_response', sessionId, requestId: request.data.requestId, approved: true }),
};

const QUESTION: WaitCase = {
  kind: 'question',
  eventType: 'ask_user_questions',
  session: { executionMode: 'CLOUD', permissionLevel: 'FULL' },
  env: {},
  rounds: () => [
    {
      toolCalls: [
        { id: 'call_write', name: 'write_file', arguments: { path: 'note.txt', content: 'before the stop' } },
        { id: 'call_ask', name: 'ask_user_questions', arguments: { questions: [{ question: 'Go on?' }] } },
        // Not read-only, so it waits for the question: it runs once the answer comes.
        { id: 'call_after', name: 'write_file', arguments: { path: 'after.txt', content: 'after the answer' } },
      ],
    },
    { content: 'Going on.' },
  ],
  answer: (client, sessionId, request) => client.send({ type: 'ask_user_answer', sessionId, requestId: request.data.requestId, answers: { 'Go on?': 'yes' } }),
};

const LOCAL_TOOL: WaitCase = {
  kind: 'local_tool',
  eventType: 'tool_request',
  session: { executionMode: 'LOCAL', permissionLevel: 'READ_ONLY' },
  env: {},
  rounds: () => [
    {
      toolCalls: [
        // A server-only tool: it runs here, not on the desktop.
        { id: 'call_tasks', name: 'task_list', arguments: {} },
        { id: 'call_write', name: 'write_file', arguments: { path: 'a.txt', content: 'desk' } },
      ],
    },
    { content: 'Written on your desktop.' },
  ],
  answer: (client, sessionId, request) =>
    client.send({ type: 'tool_response', sessionId, requestId: request.data.requestId, result: JSON.stringify({ path: 'a.txt', bytes: 4 }) }),
};

/** A stored message, as the comparison reads it (ids and times aside). */
function shape(message: Record<string, unknown>): unknown[] {
  return [message.role, message.content, message.toolCallId ?? null, JSON.stringify(message.toolCalls ?? null)];
}

/** The event's data as first sent, without what differs between two sendings. */
function requestData(event: WsEvent): Record<string, unknown> {
  return { type: event.type, sessionId: event.sessionId, data: event.data };
}

describe('a run waiting for a person, across a restart', () => {
  let harness: RestartableServer;
  let provider: FakeOpenAiProvider;

  beforeEach(async () => {
    harness = await RestartableServer.create(TOKEN, 'harness-waits-');
    provider = harness.provider;
  });

  afterEach(() => harness.dispose());

  const start = (env: Record<string, string>) => harness.start({ HARNESS_TOKENS: `${TOKEN}=1,${OTHER_TOKEN}=2`, ...env });

  const stop = async (signal: 'SIGTERM' | 'SIGKILL'): Promise<void> => {
    expect(await harness.stop(signal)).toEqual(signal === 'SIGTERM' ? { code: 0, signal: null } : { code: null, signal: 'SIGKILL' });
  };

  const conversation = async (api: HttpClient, sessionId: number): Promise<unknown[][]> =>
    ((await api.get(`/api/sessions/${sessionId}/messages`)).body as Array<Record<string, unknown>>).map(shape);

  const activities = async (api: HttpClient, sessionId: number): Promise<unknown[][]> =>
    ((await api.get(`/api/sessions/${sessionId}/activities`)).body as Array<Record<string, unknown>>).map((activity) => [activity.toolCallId, activity.status]);

  const readDb = <T>(read: (db: Database.Database) => T): T => harness.readDb(read);

  /** Starts a run of `wait` in a new session and returns once it waits (and its first call has its result). */
  const startWaiting = async (api: HttpClient, client: WsTestClient, wait: WaitCase, workspace: string) => {
    const session = (await api.post('/api/sessions', { ...wait.session, workspace })).body as { id: number };
    provider.script(...wait.rounds());
    const posted = await api.post(`/api/sessions/${session.id}/messages`, { content: 'do it, then wait for me' });
    expect(posted.status).toBe(202);
    const executionId = posted.body.executionId as string;
    const request = await client.waitFor((event) => event.type === wait.eventType && event.data.executionId === executionId);
    return { sessionId: session.id, executionId, request };
  };

  /** The same run, answered while the server lives: what the restarted run must end up as. */
  const baseline = async (api: HttpClient, client: WsTestClient, wait: WaitCase) => {
    const { sessionId, executionId, request } = await startWaiting(api, client, wait, 'baseline');
    wait.answer(client, sessionId, request);
    await client.waitForRunEvent('message_end', executionId);
    return { sessionId, conversation: await conversation(api, sessionId), activities: await activities(api, sessionId) };
  };

  describe.each(['SIGTERM', 'SIGKILL'] as const)('stopped with %s', (signal) => {
    it.each([APPROVAL, QUESTION, LOCAL_TOOL].map((wait) => [wait.kind, wait] as const))(
      'keeps a waiting %s, sends it again, and resumes the run to the end once it is answered',
      async (_kind, wait) => {
        let { api, client } = await start(wait.env);
        const expected = await baseline(api, client, wait);

        const { sessionId, executionId, request } = await startWaiting(api, client, wait, 'restarted');
        const firstCall = wait.rounds()[0].toolCalls![0].id;
        await client.waitFor((event) => event.type === 'tool_call_result' && event.data.executionId === executionId && event.data.tool_call_id === firstCall);
        expect((await api.get(`/api/sessions/${sessionId}/pending`)).body).toEqual([
          expect.objectContaining({ requestId: request.data.requestId, kind: wait.kind, executionId, event: { type: wait.eventType, data: request.data } }),
        ]);
        const providerCalls = provider.requests.length;

        await stop(signal);
        expect(readDb((db) => db.prepare('SELECT status FROM runs WHERE execution_id = ?').get(executionId))).toEqual({
          status: signal === 'SIGTERM' ? 'waiting' : 'running',
        });
        expect(readDb((db) => db.prepare('SELECT request_id, kind FROM pending_waits').all())).toEqual([{ request_id: request.data.requestId, kind: wait.kind }]);
        // Nothing of the stop itself reached the log: no withdrawal, no end of the run.
        const batches = readDb((db) => db.prepare('SELECT events FROM session_event_batches WHERE session_id = ?').pluck().all(sessionId)) as string[];
        const logged = batches.flatMap((events) => events.split('\n')).map((json) => JSON.parse(json) as { type: string });
        expect(logged.map((event) => event.type)).not.toEqual(expect.arrayContaining(['error']));
        expect(logged.map((event) => event.type).filter((type) => /cancelled|resolved|message_end/.test(type))).toEqual([]);

        ({ api, client } = await start(wait.env));
        expect(harness.process!.stderr()).toContain(`run ${executionId} of session ${sessionId} waits for a person across the restart`);
        // Shown as waiting, not interrupted: the session is busy, the wait is listed and sent again.
        expect(readDb((db) => db.prepare('SELECT status FROM runs WHERE execution_id = ?').get(executionId))).toEqual({ status: 'waiting' });
        expect((await api.post(`/api/sessions/${sessionId}/messages`, { content: 'anyone?' })).status).toBe(409);
        const listed = (await api.get('/api/sessions')).body.sessions.find((session: { id: number }) => session.id === sessionId);
        expect(listed).toEqual(expect.objectContaining({ activeRun: true, runStatus: 'waiting' }));
        expect((await api.get(`/api/sessions/${sessionId}/pending`)).body.map((pending: { requestId: string }) => pending.requestId)).toEqual([request.data.requestId]);
        const again = await client.waitFor((event) => event.type === wait.eventType);
        expect(requestData(again)).toEqual(requestData(request));
        // The very event first sent, as the session's event log kept it: its number and time too.
        expect([again.seq, again.timestamp]).toEqual([request.seq, request.timestamp]);
        expect(request.seq).toEqual(expect.any(Number));

        wait.answer(client, sessionId, again);
        const end = await client.waitFor((event) => ['message_end', 'error'].includes(event.type) && event.data.executionId === executionId, { timeoutMs: 10_000 });
        expect(end.type).toBe('message_end');

        // As if never interrupted: the same conversation, the same activities, one model call more.
        expect(await conversation(api, sessionId)).toEqual(expected.conversation);
        expect(await activities(api, sessionId)).toEqual(expected.activities);
        expect(provider.requests.length).toBe(providerCalls + 1);
        expect(openAiConversationProblem(provider.requests.at(-1)!.body.messages)).toBeNull();
        expect((await api.get(`/api/sessions/${sessionId}/pending`)).body).toEqual([]);
        expect(readDb((db) => db.prepare('SELECT status FROM runs WHERE execution_id = ?').get(executionId))).toEqual({ status: 'completed' });
        if (wait.kind === 'approval') {
          expect(fs.readFileSync(harness.workspaceFile('restarted', 'proof.txt'), 'utf8')).toBe(' and after\n');
          const read = (await api.get(`/api/sessions/${sessionId}/messages`)).body.find((message: { toolCallId?: string }) => message.toolCallId === 'call_read');
          expect(read.content).toContain('and after');
          const resolved = client.events.find((event) => event.type === 'approval_resolved');
          expect(resolved?.data).toEqual(expect.objectContaining({ requestId: request.data.requestId, outcome: 'approved', executionId }));
        }
      },
      60_000,
    );
  });

  it('changes nothing on a forged answer after a restart; the owner’s answer still counts', async () => {
    let { api, client, url } = await start(APPROVAL.env);
    const { sessionId, executionId, request } = await startWaiting(api, client, APPROVAL, 'forged');
    const other = (await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' })).body as { id: number };
    await stop('SIGKILL');

    ({ api, client, url } = await start(APPROVAL.env));
    const intruder = await harness.connect(url, OTHER_TOKEN);
    await client.waitFor((event) => event.type === 'approval_request');
    const requestId = request.data.requestId;
    const refused = async (sender: WsTestClient, frame: Record<string, unknown>): Promise<string> => {
      const since = sender.mark();
      sender.send(frame);
      const error = await sender.waitFor((event) => event.type === 'error', { since });
      expect(error.data.final).toBe(false);
      return String(error.data.message);
    };
    const approve = { type: 'approval_response', approved: true };
    expect(await refused(intruder, { ...approve, sessionId, requestId })).toMatch(/not found/);
    expect(await refused(client, { ...approve, sessionId: other.id, requestId })).toMatch(/No pending approval request/);
    expect(await refused(client, { ...approve, sessionId, requestId: 'made-up' })).toMatch(/No pending approval request/);
    expect(await refused(client, { ...approve, sessionId, requestId, arguments: { command: 'rm -rf ~' } })).toMatch(/cannot change a call/);
    // An answer of another kind for the same id.
    expect(await refused(client, { type: 'ask_user_answer', sessionId, requestId, answers: ['yes'] })).toMatch(/No pending questions/);
    expect(await refused(client, { type: 'tool_response', sessionId, requestId, result: 'done' })).toMatch(/No pending tool request/);
    // The intruder was not even sent the request.
    expect(intruder.events.some((event) => event.type === 'approval_request')).toBe(false);

    expect(client.events.some((event) => event.type === 'approval_resolved')).toBe(false);
    expect((await api.get(`/api/sessions/${sessionId}/pending`)).body.map((pending: { requestId: string }) => pending.requestId)).toEqual([requestId]);
    expect(fs.existsSync(harness.workspaceFile('forged', 'proof.txt'))).toBe(false);

    client.send({ ...approve, sessionId, requestId, approved: false, message: 'not after all', arguments: request.data.arguments });
    await client.waitForRunEvent('message_end', executionId, { timeoutMs: 10_000 });
    const shell = (await api.get(`/api/sessions/${sessionId}/messages`)).body.find((message: { toolCallId?: string }) => message.toolCallId === 'call_shell');
    expect(JSON.parse(shell.content)).toEqual({ error: "The user denied the call to 'shell': not after all" });
    expect(fs.existsSync(harness.workspaceFile('forged', 'proof.txt'))).toBe(false);
  }, 60_000);

  it('withdraws the waits of a cancelled session after a restart and closes every call; the session goes on', async () => {
    let { api, client } = await start({});
    const { sessionId, executionId, request } = await startWaiting(api, client, QUESTION, 'cancelled');
    await client.waitFor((event) => event.type === 'tool_call_result' && event.data.tool_call_id === 'call_write');
    await stop('SIGKILL');

    ({ api, client } = await start({}));
    await client.waitFor((event) => event.type === 'ask_user_questions');
    const cancelled = await api.post(`/api/sessions/${sessionId}/cancel`);
    expect(cancelled.body).toEqual({ cancelled: true });
    const withdrawn = await client.waitFor((event) => event.type === 'ask_user_questions_cancelled');
    expect(withdrawn.data).toEqual({ requestId: request.data.requestId, executionId });
    await client.waitForRunEvent('message_end', executionId);
    expect((await api.get(`/api/sessions/${sessionId}/pending`)).body).toEqual([]);
    expect(readDb((db) => db.prepare('SELECT status FROM runs WHERE execution_id = ?').get(executionId))).toEqual({ status: 'cancelled' });

    const messages = (await api.get(`/api/sessions/${sessionId}/messages`)).body as Array<Record<string, unknown>>;
    expect(messages.map((message) => [message.role, message.toolCallId ?? null])).toEqual([
      ['user', null],
      ['assistant', null],
      ['tool', 'call_write'],
      ['tool', 'call_ask'],
      ['tool', 'call_after'],
    ]);
    expect(JSON.parse(String(messages[2].content))).toEqual(expect.objectContaining({ path: 'note.txt' }));
    expect(messages[3].content).toBe('Tool execution cancelled: the run was cancelled before the tool finished');
    // The call queued behind the question never ran.
    expect(messages[4].content).toBe('Tool execution cancelled: the run was cancelled before the tool finished');
    expect(fs.existsSync(harness.workspaceFile('cancelled', 'after.txt'))).toBe(false);
    // A late answer finds nothing to answer.
    const since = client.mark();
    client.send({ type: 'ask_user_answer', sessionId, requestId: request.data.requestId, answers: ['late'] });
    expect((await client.waitFor((event) => event.type === 'error', { since })).data.message).toMatch(/No pending questions/);

    // The provider rejects unanswered tool calls as OpenAI does.
    provider.script({ content: 'Still here.' });
    const next = await api.post(`/api/sessions/${sessionId}/messages`, { content: 'are you there?' });
    expect(next.status).toBe(202);
    const end = await client.waitFor((event) => ['message_end', 'error'].includes(event.type) && event.data.executionId === next.body.executionId);
    expect(end.type).toBe('message_end');
  }, 60_000);

  it('answers a wait that expired while the server was down with its timeout result at start, and the run goes on', async () => {
    const env = { ...APPROVAL.env, HARNESS_APPROVAL_TIMEOUT_MS: '3000' };
    let { api, client } = await start(env);
    const { sessionId, executionId, request } = await startWaiting(api, client, APPROVAL, 'expired');
    await stop('SIGKILL');
    const expiresAt = Date.parse(String(request.data.expiresAt));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now() + 100)));

    ({ api, client } = await start(env));
    expect(harness.process!.stderr()).toContain('its waits expired while the server was down, it goes on');
    await waitUntil(
      async () => readDb((db) => (db.prepare('SELECT status FROM runs WHERE execution_id = ?').get(executionId) as { status: string }).status) === 'completed',
      'the run completed',
      10_000,
    );
    const messages = (await api.get(`/api/sessions/${sessionId}/messages`)).body as Array<Record<string, unknown>>;
    expect(messages.map((message) => [message.role, message.toolCallId ?? null, message.role === 'assistant' ? message.content : null])).toEqual([
      ['user', null, null],
      ['assistant', null, null],
      ['tool', 'call_write', null],
      ['tool', 'call_shell', null],
      ['tool', 'call_read', null],
      ['assistant', null, 'All done.'],
    ]);
    expect(JSON.parse(String(messages[3].content))).toEqual({
      error: "'shell' needed approval (Shell commands need approval at READ_WRITE) and got no answer in time; the call did not run",
    });
    expect((await api.get(`/api/sessions/${sessionId}/pending`)).body).toEqual([]);
    expect(fs.existsSync(harness.workspaceFile('expired', 'proof.txt'))).toBe(false);
  }, 60_000);

  it('ends a wait that expires after the restart, while the run waits, as a live one ends; the run goes on', async () => {
    const env = { ...APPROVAL.env, HARNESS_APPROVAL_TIMEOUT_MS: '8000' };
    let { api, client } = await start(env);
    const { sessionId, executionId, request } = await startWaiting(api, client, APPROVAL, 'expires-later');
    await stop('SIGKILL');

    ({ api, client } = await start(env));
    const expiresAt = Date.parse(String(request.data.expiresAt));
    expect(expiresAt).toBeGreaterThan(Date.now());
    await client.waitFor((event) => event.type === 'approval_request');
    expect((await api.get('/api/sessions')).body.sessions.find((session: { id: number }) => session.id === sessionId).runStatus).toBe('waiting');

    const resolved = await client.waitFor((event) => event.type === 'approval_resolved', { timeoutMs: 15_000 });
    // Not before its deadline, kept across the restart.
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt - 50);
    expect(resolved.data).toEqual(expect.objectContaining({ requestId: request.data.requestId, outcome: 'expired', executionId }));
    await client.waitForRunEvent('message_end', executionId, { timeoutMs: 10_000 });

    const messages = (await api.get(`/api/sessions/${sessionId}/messages`)).body as Array<Record<string, unknown>>;
    expect(messages.map((message) => [message.role, message.toolCallId ?? null])).toEqual([
      ['user', null],
      ['assistant', null],
      ['tool', 'call_write'],
      ['tool', 'call_shell'],
      ['tool', 'call_read'],
      ['assistant', null],
    ]);
    expect(JSON.parse(String(messages[3].content)).error).toMatch(/needed approval .* and got no answer in time; the call did not run/);
    // The call behind it ran, and found nothing: the shell command never ran.
    expect(String(messages[4].content)).toMatch(/proof\.txt/);
    expect(fs.existsSync(harness.workspaceFile('expires-later', 'proof.txt'))).toBe(false);
    expect((await api.get(`/api/sessions/${sessionId}/pending`)).body).toEqual([]);
    expect((await api.get('/api/sessions')).body.sessions.find((session: { id: number }) => session.id === sessionId).runStatus).toBeNull();
  }, 60_000);

  it('keeps several waits of one round, sends each again, and resumes once the last is answered', async () => {
    const several: ScriptedRound[] = [
      {
        toolCalls: [
          { id: 'call_a', name: 'read_file', arguments: { path: 'a.txt' } },
          { id: 'call_b', name: 'read_file', arguments: { path: 'b.txt' } },
        ],
      },
      { content: 'Read both.' },
    ];
    let { api, client } = await start({});
    const session = (await api.post('/api/sessions', { executionMode: 'LOCAL', permissionLevel: 'READ_ONLY', workspace: 'several' })).body as { id: number };
    provider.script(...several);
    const posted = await api.post(`/api/sessions/${session.id}/messages`, { content: 'read a and b' });
    const executionId = posted.body.executionId as string;
    const isRequest = (event: WsEvent) => event.type === 'tool_request' && event.data.executionId === executionId;
    await waitUntil(async () => client.events.filter(isRequest).length === 2, 'both desktop requests were sent', 10_000);
    const first = client.events.filter(isRequest);
    await stop('SIGKILL');

    ({ api, client } = await start({}));
    await waitUntil(async () => client.events.filter(isRequest).length === 2, 'both requests were sent again', 10_000);
    const again = client.events.filter(isRequest);
    expect(again.map(requestData)).toEqual(first.map(requestData));
    expect((await api.get(`/api/sessions/${session.id}/pending`)).body).toHaveLength(2);

    // One answer is not enough: the run waits for the other.
    client.send({ type: 'tool_response', sessionId: session.id, requestId: again[1].data.requestId, result: 'contents of b' });
    await waitUntil(async () => (await api.get(`/api/sessions/${session.id}/pending`)).body.length === 1, 'one wait answered', 10_000);
    expect((await api.get('/api/sessions')).body.sessions[0]).toEqual(expect.objectContaining({ id: session.id, runStatus: 'waiting' }));
    expect(client.events.some((event) => event.type === 'message_end')).toBe(false);

    client.send({ type: 'tool_response', sessionId: session.id, requestId: again[0].data.requestId, result: 'contents of a' });
    await client.waitForRunEvent('message_end', executionId, { timeoutMs: 10_000 });
    const messages = (await api.get(`/api/sessions/${session.id}/messages`)).body as Array<Record<string, unknown>>;
    expect(messages.map((message) => [message.role, message.toolCallId ?? null, message.role === 'tool' ? message.content : null])).toEqual([
      ['user', null, null],
      ['assistant', null, null],
      ['tool', 'call_a', 'contents of a'],
      ['tool', 'call_b', 'contents of b'],
      ['assistant', null, null],
    ]);
    expect(openAiConversationProblem(provider.requests.at(-1)!.body.messages)).toBeNull();
  }, 60_000);
});
