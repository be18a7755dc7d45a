import * as fs from 'node:fs';
import * as path from 'node:path';
import { ATTACHMENT_STORE } from '../src/harness/harness.module';
import type { AttachmentStore } from '../src/harness/tool/attachment-store';
import { ActivityRepository } from '../src/session/persistence/activity-repository';
import { MessageRepository } from '../src/session/persistence/message-repository';
import { RunService } from '../src/session/run/run.service';
import { Gate } from './support/fake-openai-provider';
import type { HttpClient } from './support/http-client';
import { createSession, isAlive, startRun, startTestHarness, waitUntil, type SessionView, type TestHarness } from './support/test-harness';

interface SessionPage {
  sessions: Array<SessionView & { mcpServers: number[]; activeRun: boolean; runStatus: 'running' | 'waiting' | null }>;
  next: number | null;
}

describe('GET /api/sessions', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  const cloud = { executionMode: 'CLOUD', permissionLevel: 'FULL' } as const;
  const list = (client: HttpClient, query = '') => client.get<SessionPage>(`/api/sessions${query}`);
  const ids = (page: SessionPage) => page.sessions.map((session) => session.id);

  it("answers the caller's own sessions, newest first, each as GET /api/sessions/:id answers it plus activeRun and runStatus", async () => {
    const mine = [await createSession(t.userA, cloud), await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'SMART', tools: ['read_file'] })];
    const theirs = await createSession(t.userB, cloud);
    const answer = await list(t.userA);
    expect(answer.status).toBe(200);
    expect(answer.body.next).toBeNull();
    expect(ids(answer.body)).toEqual([mine[1].id, mine[0].id]);
    for (const item of answer.body.sessions) {
      const single = (await t.userA.get(`/api/sessions/${item.id}`)).body;
      expect(item).toEqual({ ...single, activeRun: false, runStatus: null });
    }
    expect(ids((await list(t.userB)).body)).toEqual([theirs.id]);
  });

  it('answers an empty page to a user without sessions', async () => {
    await createSession(t.userA, cloud);
    expect((await list(t.userB)).body).toEqual({ sessions: [], next: null });
  });

  it('pages with limit and before, handing out next until the last page', async () => {
    const mine: number[] = [];
    for (let index = 0; index < 5; index += 1) {
      mine.push((await createSession(t.userA, cloud)).id);
      await createSession(t.userB, cloud);
    }
    const newestFirst = [...mine].reverse();

    const first = (await list(t.userA, '?limit=2')).body;
    expect(ids(first)).toEqual(newestFirst.slice(0, 2));
    expect(first.next).toBe(newestFirst[1]);
    const second = (await list(t.userA, `?limit=2&before=${first.next}`)).body;
    expect(ids(second)).toEqual(newestFirst.slice(2, 4));
    const last = (await list(t.userA, `?limit=2&before=${second.next}`)).body;
    expect(ids(last)).toEqual(newestFirst.slice(4));
    expect(last.next).toBeNull();
    // `before` is a cursor, not one of the caller's ids: any id works.
    expect(ids((await list(t.userA, `?before=${mine[2] + 1}`)).body)).toEqual([mine[2], mine[1], mine[0]]);
  });

  it('holds 20 sessions by default and 100 at most', async () => {
    for (let index = 0; index < 21; index += 1) await createSession(t.userA, cloud);
    const page = (await list(t.userA)).body;
    expect(page.sessions).toHaveLength(20);
    expect(page.next).toBe(page.sessions[19].id);
    expect((await list(t.userA, '?limit=100')).body.sessions).toHaveLength(21);
  });

  it('says activeRun and runStatus while a run is going, and no longer once it has ended', async () => {
    const busy = await createSession(t.userA, cloud);
    const idle = await createSession(t.userA, cloud);
    const gate = new Gate();
    t.provider.script({ content: 'Thinking slowly.', gate });
    await startRun(t.userA, busy.id, 'take your time');
    await t.provider.waitForRequest(1);

    const during = (await list(t.userA)).body.sessions;
    expect(during.map((session) => [session.id, session.activeRun, session.runStatus])).toEqual([
      [idle.id, false, null],
      [busy.id, true, 'running'],
    ]);

    gate.release();
    await t.harness.app.get(RunService).whenIdle(busy.id);
    expect((await list(t.userA)).body.sessions.map((session) => [session.activeRun, session.runStatus])).toEqual([
      [false, null],
      [false, null],
    ]);
  });

  describe('when the query is not valid', () => {
    const LIMIT = 'limit must be an integer from 1 to 100';
    const BEFORE = 'before must be a session id (a positive integer)';

    it.each([
      ['?limit=0', LIMIT],
      ['?limit=101', LIMIT],
      ['?limit=-1', LIMIT],
      ['?limit=abc', LIMIT],
      ['?limit=1.5', LIMIT],
      ['?limit=1e1', LIMIT],
      ['?limit=', LIMIT],
      ['?limit=1&limit=2', LIMIT],
      ['?before=0', BEFORE],
      ['?before=x', BEFORE],
      ['?before=99999999999999999', BEFORE],
      ['?limit=0&before=x', `${LIMIT}; ${BEFORE}`],
      ['?page=2', 'page: property page should not exist'],
    ])('answers %s with a 400 naming the field', async (query, message) => {
      await createSession(t.userA, cloud);
      const answer = await list(t.userA, query);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ statusCode: 400, message });
    });
  });

  it('answers 401 without a valid token', async () => {
    expect((await list(t.anonymous)).status).toBe(401);
  });
});

describe('DELETE /api/sessions/:id', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  const cloud = { executionMode: 'CLOUD', permissionLevel: 'FULL' } as const;
  const remove = (client: HttpClient, sessionId: number) => client.request('DELETE', `/api/sessions/${sessionId}`);
  const folderOf = (session: SessionView) => path.join(t.workspaceRoot, `user-${session.userId}`, session.workspace);

  /** Runs a round that writes a file (a message, a tool message, an activity), and stores an attachment. */
  async function sessionWithHistory(): Promise<{ session: SessionView; attachmentId: string }> {
    const session = await createSession(t.userA, cloud);
    t.provider.script(
      { toolCalls: [{ id: 'call_w', name: 'write_file', arguments: { path: 'notes/out.txt', content: 'kept until deleted' } }] },
      { content: 'Written.' },
    );
    await startRun(t.userA, session.id, 'write something');
    await t.harness.app.get(RunService).whenIdle(session.id);
    const attachment = t.harness.app
      .get<AttachmentStore>(ATTACHMENT_STORE)
      .save({ sessionId: session.id, executionId: null, toolCallId: 'call_w', mediaType: 'text/plain', data: new TextEncoder().encode('full text') });
    expect((await t.userA.get(`/api/sessions/${session.id}/messages`)).body).toHaveLength(4);
    expect((await t.userA.get(`/api/sessions/${session.id}/activities`)).body).toHaveLength(1);
    expect(fs.readFileSync(path.join(folderOf(session), 'notes', 'out.txt'), 'utf8')).toBe('kept until deleted');
    return { session, attachmentId: attachment.id };
  }

  it('deletes the session, its history, its attachments and its workspace folder, and answers 204', async () => {
    const { session, attachmentId } = await sessionWithHistory();
    const other = await createSession(t.userA, cloud);

    const answer = await remove(t.userA, session.id);
    expect(answer.status).toBe(204);
    expect(answer.text).toBe('');

    for (const route of ['', '/messages', '/activities', `/attachments/${attachmentId}`]) {
      expect([route, (await t.userA.get(`/api/sessions/${session.id}${route}`)).status]).toEqual([route, 404]);
    }
    expect(t.harness.app.get(MessageRepository).listBySession(session.id)).toEqual([]);
    expect(t.harness.app.get(ActivityRepository).listBySession(session.id)).toEqual([]);
    expect(t.harness.app.get<AttachmentStore>(ATTACHMENT_STORE).read(session.id, attachmentId)).toBeNull();
    expect(fs.existsSync(folderOf(session))).toBe(false);
    expect((await t.userA.get<SessionPage>('/api/sessions')).body.sessions.map((item) => item.id)).toEqual([other.id]);
    expect(fs.existsSync(folderOf(other))).toBe(true);
    // Gone is gone: a second delete finds nothing.
    expect((await remove(t.userA, session.id)).status).toBe(404);
  });

  it('refuses with 409 while a run is active, and deletes once it has ended', async () => {
    const session = await createSession(t.userA, cloud);
    const gate = new Gate();
    t.provider.script({ content: 'Still working.', gate });
    await startRun(t.userA, session.id, 'work');
    await t.provider.waitForRequest(1);

    const refused = await remove(t.userA, session.id);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ statusCode: 409, message: `Session ${session.id} cannot be deleted while a run is active` });
    expect((await t.userA.get(`/api/sessions/${session.id}`)).status).toBe(200);
    expect(fs.existsSync(folderOf(session))).toBe(true);

    gate.release();
    await t.harness.app.get(RunService).whenIdle(session.id);
    expect((await remove(t.userA, session.id)).status).toBe(204);
    expect((await t.userA.get(`/api/sessions/${session.id}`)).status).toBe(404);
  });

  it("answers 404 to another user and touches nothing of the owner's", async () => {
    const { session, attachmentId } = await sessionWithHistory();
    expect((await remove(t.userB, session.id)).status).toBe(404);
    expect((await remove(t.userB, 9999)).status).toBe(404);
    expect((await remove(t.userA, 9999)).status).toBe(404);
    expect((await remove(t.userA, 'abc' as unknown as number)).status).toBe(404);
    expect((await t.anonymous.request('DELETE', `/api/sessions/${session.id}`)).status).toBe(401);

    expect((await t.userA.get(`/api/sessions/${session.id}`)).status).toBe(200);
    expect((await t.userA.get(`/api/sessions/${session.id}/messages`)).body).toHaveLength(4);
    expect((await t.userA.get(`/api/sessions/${session.id}/attachments/${attachmentId}`)).status).toBe(200);
    expect(fs.existsSync(path.join(folderOf(session), 'notes', 'out.txt'))).toBe(true);
  });

  it('keeps a workspace folder that another session of the user still uses, and removes it with the last one', async () => {
    const first = await createSession(t.userA, { ...cloud, workspace: 'shared' });
    const second = await createSession(t.userA, { ...cloud, workspace: 'shared' });
    const theirs = await createSession(t.userB, { ...cloud, workspace: 'shared' });
    fs.writeFileSync(path.join(folderOf(first), 'plan.md'), 'both sessions read this');

    expect((await remove(t.userA, first.id)).status).toBe(204);
    expect(fs.readFileSync(path.join(folderOf(second), 'plan.md'), 'utf8')).toBe('both sessions read this');

    expect((await remove(t.userA, second.id)).status).toBe(204);
    expect(fs.existsSync(folderOf(second))).toBe(false);
    // Another user's folder of the same name is another folder.
    expect(fs.existsSync(folderOf(theirs))).toBe(true);
  });

  describe('when the session has MCP servers', () => {
    let mcp: TestHarness;

    beforeEach(async () => {
      // Idle MCP clients are kept (0): only the deletion can stop the server process.
      mcp = await startTestHarness({ mcpDemo: true, env: { HARNESS_MCP_IDLE_TIMEOUT_MS: '0' } });
    });

    afterEach(async () => {
      await mcp.close();
    });

    it("stops the session's MCP server processes", async () => {
      const session = await createSession(mcp.userA, { ...cloud, mcpServers: [1] });
      const kept = await createSession(mcp.userA, { ...cloud, mcpServers: [1] });
      const client = await mcp.connect();
      const pidOf = async (sessionId: number): Promise<number> => {
        mcp.provider.script({ toolCalls: [{ id: 'call_pid', name: 'mcp__demo__pid', arguments: {} }] }, { content: 'noted' });
        const executionId = await startRun(mcp.userA, sessionId, 'which process?');
        await client.waitForRunEvent('message_end', executionId);
        await mcp.harness.app.get(RunService).whenIdle(sessionId);
        return Number(client.runEvents(executionId).find((event) => event.type === 'tool_call_result')?.data.result);
      };
      const pid = await pidOf(session.id);
      const keptPid = await pidOf(kept.id);
      expect(Number.isInteger(pid) && Number.isInteger(keptPid) && pid !== keptPid).toBe(true);

      expect((await remove(mcp.userA, session.id)).status).toBe(204);
      await waitUntil(() => !isAlive(pid), "the deleted session's MCP server process to stop");
      expect(isAlive(keptPid)).toBe(true);
    });
  });
});
