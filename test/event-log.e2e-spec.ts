import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RunService } from '../src/session/run/run.service';
import { Gate } from './support/fake-openai-provider';
import type { HttpAnswer, HttpClient } from './support/http-client';
import { createSession, startRun, startTestHarness, TOKEN_B, type TestHarness } from './support/test-harness';
import type { WsEvent } from './support/ws-test-client';

interface EventsPage {
  events: WsEvent[];
  next: number | null;
}

/** Every stored event of the session after `after`, page by page. */
async function readLog(client: HttpClient, sessionId: number, after = 0, limit?: number): Promise<WsEvent[]> {
  const events: WsEvent[] = [];
  for (let cursor: number | null = after; cursor !== null; ) {
    const answer: HttpAnswer<EventsPage> = await client.get<EventsPage>(`/api/sessions/${sessionId}/events?after=${cursor}${limit ? `&limit=${limit}` : ''}`);
    if (answer.status !== 200) throw new Error(`GET events: ${answer.status} ${answer.text}`);
    events.push(...answer.body.events);
    cursor = answer.body.next;
  }
  return events;
}

/** The numbers from `first` to `last`. */
function range(first: number, last: number): number[] {
  return Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => first + i);
}

/** A run of two rounds: a tool call, then a streamed answer. */
function scriptRun(t: TestHarness, answer: string): void {
  t.provider.script(
    { content: 'Looking.', toolCalls: [{ id: 'call_glob', name: 'glob', arguments: { pattern: '*.txt' } }] },
    { reasoning: 'Nothing there.', content: answer },
  );
}

async function runToEnd(t: TestHarness, sessionId: number, content: string): Promise<string> {
  const executionId = await startRun(t.userA, sessionId, content);
  await t.harness.app.get(RunService).whenIdle(sessionId);
  return executionId;
}

describe('the session event log', () => {
  let t: TestHarness;

  afterEach(async () => {
    await t?.close();
  });

  describe('over HTTP and WebSocket', () => {
    beforeEach(async () => {
      t = await startTestHarness();
    });

    it('keeps every event of a run nobody watched, numbered from 1, and serves it in pages', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      scriptRun(t, 'Nothing matched your pattern.');
      const executionId = await runToEnd(t, session.id, 'Find the text files.');

      const events = await readLog(t.userA, session.id);
      expect(events.map((event) => event.seq)).toEqual(range(1, events.length));
      for (const event of events) {
        expect(event).toEqual({ type: expect.any(String), sessionId: session.id, data: expect.any(Object), timestamp: expect.any(Number), seq: expect.any(Number) });
        expect(event.data.executionId).toBe(executionId);
      }
      const types = events.map((event) => event.type);
      expect(types.filter((type) => type !== 'content_delta' && type !== 'thinking_delta' && type !== 'tool_call_args_delta')).toEqual([
        'tool_call_start',
        'tool_call_result',
        'activity',
        'thinking_start',
        'thinking_end',
        'message_end',
      ]);
      const text = events.filter((event) => event.type === 'content_delta').map((event) => event.data.delta).join('');
      expect(text).toBe('Looking.Nothing matched your pattern.');

      // Small pages add up to the same log; `next` says where the following page starts.
      const first = await t.userA.get<EventsPage>(`/api/sessions/${session.id}/events?limit=5`);
      expect(first.body.events).toEqual(events.slice(0, 5));
      expect(first.body.next).toBe(5);
      expect(await readLog(t.userA, session.id, 0, 4)).toEqual(events);
      expect((await t.userA.get<EventsPage>(`/api/sessions/${session.id}/events?after=${events.length}`)).body).toEqual({ events: [], next: null });

      // A client that subscribes now reads the same log, as the WebSocket frames it sends.
      const late = await t.connect();
      late.subscribe(session.id);
      await late.roundTrip();
      expect(late.sessionEvents(session.id)).toEqual(events);
    });

    it('answers bad paging parameters with a 400 that names the field', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      for (const [query, field] of [
        ['after=-1', 'after'],
        ['after=abc', 'after'],
        ['limit=0', 'limit'],
        ['limit=1001', 'limit'],
        ['limit=2.5', 'limit'],
      ]) {
        const answer = await t.userA.get(`/api/sessions/${session.id}/events?${query}`);
        expect({ query, status: answer.status, message: answer.body?.message }).toEqual({ query, status: 400, message: expect.stringContaining(field) });
      }
    });

    it('hides the log of another user’s session: a 404 over HTTP, an error event over the WebSocket', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      scriptRun(t, 'Private.');
      await runToEnd(t, session.id, 'Mine only.');

      expect((await t.userB.get(`/api/sessions/${session.id}/events`)).status).toBe(404);
      expect((await t.userA.get('/api/sessions/999999/events')).status).toBe(404);
      expect((await t.anonymous.get(`/api/sessions/${session.id}/events`)).status).toBe(401);

      const stranger = await t.connect(TOKEN_B);
      const since = stranger.mark();
      stranger.subscribe(session.id, 0);
      const error = await stranger.waitFor((event) => event.type === 'error', { since });
      expect(error.data).toEqual({ message: `Session ${session.id} not found`, final: false });
      await stranger.roundTrip();
      expect(stranger.events.filter((event) => event.type !== 'error')).toEqual([]);
    });

    it('sends a subscriber the events after `after`, then the live ones of a new run, each once', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      scriptRun(t, 'First answer.');
      await runToEnd(t, session.id, 'First.');
      const firstRun = await readLog(t.userA, session.id);
      const after = firstRun.length - 3;

      const client = await t.connect();
      client.subscribe(session.id, after);
      await client.roundTrip();
      expect(client.sessionEvents(session.id)).toEqual(firstRun.slice(after));

      scriptRun(t, 'Second answer, streamed live.');
      const executionId = await startRun(t.userA, session.id, 'Second.');
      await client.waitForRunEvent('message_end', executionId);

      const seen = client.sessionEvents(session.id);
      expect(seen.map((event) => event.seq)).toEqual(range(after + 1, seen.length + after));
      expect(seen).toEqual(await readLog(t.userA, session.id, after));
    });

    it('joins a running stream without a gap or a repeat, wherever the subscription lands', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      const quiet = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      const watcher = await t.connect();
      // Three clients that follow another session first, so that they receive nothing of this
      // one until they subscribe to it mid-run.
      const joiners = await Promise.all([t.connect(), t.connect(), t.connect()]);
      for (const joiner of joiners) joiner.subscribe(quiet.id);
      await Promise.all(joiners.map((joiner) => joiner.roundTrip()));

      const end = new Gate();
      // About 480 deltas, one turn of the event loop apart.
      const answer = 'A long answer that streams in many small pieces, one turn of the event loop apart. '.repeat(40);
      t.provider.script({ content: answer, gate: end });
      const executionId = await startRun(t.userA, session.id, 'Talk for a while.');

      // Each joiner subscribes with a seq the watcher has just seen, while deltas keep coming.
      const afters: number[] = [];
      for (const point of [2, 100, 250]) {
        const seen = await watcher.waitFor((event) => event.sessionId === session.id && (event.seq ?? 0) >= point);
        afters.push(seen.seq as number);
        joiners[afters.length - 1].subscribe(session.id, seen.seq);
      }
      end.release();
      await watcher.waitForRunEvent('message_end', executionId);
      const all = watcher.sessionEvents(session.id);
      expect(all.map((event) => event.seq)).toEqual(range(1, all.length));

      for (const [index, joiner] of joiners.entries()) {
        await joiner.waitForRunEvent('message_end', executionId);
        const got = joiner.sessionEvents(session.id);
        expect(got.map((event) => event.seq)).toEqual(range(afters[index] + 1, all.length));
        expect(got).toEqual(all.slice(afters[index]));
      }
      expect(await readLog(t.userA, session.id)).toEqual(all);
    });

    it('logs a LOCAL tool request once, with the seq every connection of the owner saw', async () => {
      const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'FULL', workspace: 'desk' });
      const desktop = await t.connect();
      const laptop = await t.connect();
      t.provider.script({ toolCalls: [{ id: 'call_read', name: 'read_file', arguments: { path: 'a.txt' } }] }, { content: 'Read it.' });
      const executionId = await startRun(t.userA, session.id, 'Read a.txt on my machine.');
      const request = await desktop.waitForRunEvent('tool_request', executionId);
      const copy = await laptop.waitForRunEvent('tool_request', executionId);
      expect(copy).toEqual(request);
      desktop.send({ type: 'tool_response', sessionId: session.id, requestId: request.data.requestId, result: 'contents' });
      await desktop.waitForRunEvent('message_end', executionId);
      await laptop.waitForRunEvent('message_end', executionId);

      const events = await readLog(t.userA, session.id);
      expect(events.map((event) => event.seq)).toEqual(range(1, events.length));
      expect(events.filter((event) => event.type === 'tool_request')).toEqual([request]);
      // The laptop was withdrawn the request: that too is an event of the session, logged once.
      const withdrawn = events.filter((event) => event.type === 'tool_request_cancelled');
      expect(withdrawn.map((event) => event.data)).toEqual([{ requestId: request.data.requestId, reason: 'answered by another client', executionId }]);
      expect(laptop.sessionEvents(session.id)).toEqual(events);
    });
  });

  describe('across a restart', () => {
    let dir: string;

    // Removed after the last server using it has closed (the outer afterEach).
    beforeAll(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-event-log-'));
    });

    afterAll(() => {
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('continues numbering from the stored log', async () => {
      const env = { HARNESS_DB: path.join(dir, 'harness.db') };
      t = await startTestHarness({ env });
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      scriptRun(t, 'Before the restart.');
      await runToEnd(t, session.id, 'One.');
      const before = await readLog(t.userA, session.id);
      await t.close();

      t = await startTestHarness({ env });
      expect(await readLog(t.userA, session.id)).toEqual(before);
      const client = await t.connect();
      client.subscribe(session.id, before.length);
      await client.roundTrip();
      scriptRun(t, 'After the restart.');
      const executionId = await startRun(t.userA, session.id, 'Two.');
      await client.waitForRunEvent('message_end', executionId);

      const after = await readLog(t.userA, session.id);
      expect(after.slice(0, before.length)).toEqual(before);
      expect(after.map((event) => event.seq)).toEqual(range(1, after.length));
      expect(client.sessionEvents(session.id)).toEqual(after.slice(before.length));
    });
  });

  it('keeps at most HARNESS_EVENT_LOG_MAX_PER_SESSION events per session, the newest, still numbered on', async () => {
    t = await startTestHarness({ env: { HARNESS_EVENT_LOG_MAX_PER_SESSION: '100' } });
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    // Streamed a word at a time: one event per word, well past the bound.
    scriptRun(t, Array.from({ length: 150 }, (_, i) => `word${i}`).join(' '));
    await runToEnd(t, session.id, 'Talk a lot.');

    const kept = await readLog(t.userA, session.id);
    const first = kept[0].seq!;
    const last = kept.at(-1)!.seq!;
    expect(last).toBeGreaterThan(150);
    expect(kept.length).toBeLessThanOrEqual(100);
    // The oldest go, a tenth of the bound at a time; what is kept runs without a gap to the newest.
    expect(kept.map((event) => event.seq)).toEqual(range(first, last));
    expect(first).toBeGreaterThan(1);
  });
});
