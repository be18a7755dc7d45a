import * as fs from 'node:fs';
import * as path from 'node:path';

import { configureGrepWorkers, type GrepWorkerSettings, liveGrepWorkersOf, waitingGrepMatchers } from '../src/harness/tool/impl/grep-worker';
import type { WsEvent } from './support/ws-test-client';
import { createSession, type SessionView, startRun, startTestHarness, TOKEN_B, type TestHarness, waitUntil } from './support/test-harness';

/**
 * Slow for re2js, yet a legal pattern: with its 3 003 compiled instructions it costs a fresh
 * matching thread about a second to get going and 35–110 ms per KB of `a` after that (measured
 * on two machines), so each search of the files below keeps a thread busy for one to two seconds.
 */
const SLOW_PATTERN = '(?:a?){1000}a{1000}[bc]';
const SLOW_FILE_KB = 6;

describe('searches of one session do not hold up another session', () => {
  let t: TestHarness;
  let previous: GrepWorkerSettings;

  beforeEach(async () => {
    // The server runs in this process: share the threads as the defaults do on a two-core machine,
    // whatever this one has. (Before: two threads for everybody, first come first served.)
    previous = configureGrepWorkers({ limit: 2, perSessionLimit: 1, extraLimit: 1 });
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
    configureGrepWorkers(previous);
  });

  const workspaceOf = (session: SessionView) => path.join(t.workspaceRoot, `user-${session.userId}`, session.workspace);
  const toolResults = (events: WsEvent[], executionId: string) =>
    events.filter((event) => event.type === 'tool_call_result' && event.data.executionId === executionId);

  it("answers a session's one-line grep within 2 s while another session runs six slow ones", async () => {
    const busy = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const quick = await createSession(t.userB, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    for (let i = 1; i <= 6; i++) fs.writeFileSync(path.join(workspaceOf(busy), `slow-${i}.txt`), 'a'.repeat(SLOW_FILE_KB * 1000));
    fs.writeFileSync(path.join(workspaceOf(quick), 'notes.md'), 'intro\nneedle\n');
    const busyClient = await t.connect();
    const quickClient = await t.connect(TOKEN_B);

    t.provider.script(
      // The busy session's first round: six slow searches at once.
      {
        toolCalls: Array.from({ length: 6 }, (_, i) => ({
          id: `call_slow_${i + 1}`,
          name: 'grep',
          arguments: { pattern: SLOW_PATTERN, path: `slow-${i + 1}.txt` },
        })),
      },
      // The quick session's rounds.
      { toolCalls: [{ id: 'call_quick', name: 'grep', arguments: { pattern: 'needle' } }] },
      { content: 'found it' },
      // The busy session's last round.
      { content: 'nothing there' },
    );
    const busyRun = await startRun(t.userA, busy.id, 'search slowly');
    // Its searches hold the one thread a session may run; the other five wait their turn.
    await waitUntil(() => liveGrepWorkersOf(busy.id) === 1 && waitingGrepMatchers() === 5, 'the busy session holds its share', 10_000);

    const started = Date.now();
    const quickRun = await startRun(t.userB, quick.id, 'search quickly');
    const answer = await quickClient.waitForRunEvent('tool_call_result', quickRun, { timeoutMs: 10_000 });
    const waitedMs = Date.now() - started;
    expect(answer.data).toEqual(expect.objectContaining({ tool_call_id: 'call_quick', status: 'success' }));
    expect(JSON.parse(String(answer.data.result))).toEqual({ matches: [{ file: 'notes.md', line: 2, text: 'needle' }], truncated: false });
    expect(waitedMs).toBeLessThan(2_000);
    // None of the busy session's searches had finished: the quick one did not wait for them.
    expect(toolResults(busyClient.events, busyRun)).toEqual([]);
    await quickClient.waitForRunEvent('message_end', quickRun);

    // The busy session's searches all ran, one after another, and succeeded.
    await busyClient.waitForRunEvent('message_end', busyRun, { timeoutMs: 60_000 });
    expect(toolResults(busyClient.events, busyRun).map((event) => [event.data.tool_call_id, event.data.status, event.data.result])).toEqual(
      Array.from({ length: 6 }, (_, i) => [`call_slow_${i + 1}`, 'success', JSON.stringify({ matches: [], truncated: false })]),
    );
    expect(liveGrepWorkersOf(busy.id)).toBe(0);
    expect(waitingGrepMatchers()).toBe(0);
  }, 90_000);

  it('lists an 800-deep tree written by write_file with `glob **` well within its deadline', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const deepFile = `${Array.from({ length: 800 }, () => 'd').join('/')}/bottom.txt`;
    const client = await t.connect();
    t.provider.script(
      { toolCalls: [{ id: 'call_write', name: 'write_file', arguments: { path: deepFile, content: 'deep\n' } }] },
      { toolCalls: [{ id: 'call_glob', name: 'glob', arguments: { pattern: '**' } }] },
      { content: 'listed' },
    );
    const executionId = await startRun(t.userA, session.id, 'go deep');
    await client.waitForRunEvent('message_end', executionId, { timeoutMs: 60_000 });

    const events = client.runEvents(executionId);
    const written = events.find((event) => event.type === 'tool_call_result' && event.data.tool_call_id === 'call_write');
    expect(written?.data.status).toBe('success');
    const globStart = events.find((event) => event.type === 'tool_call_start' && event.data.tool_call_id === 'call_glob');
    const globResult = events.find((event) => event.type === 'tool_call_result' && event.data.tool_call_id === 'call_glob');
    expect(globResult?.data.status).toBe('success');
    expect(JSON.parse(String(globResult?.data.result))).toEqual({ files: [deepFile], truncated: false });
    // It took 47 s before; the deadline is 30 s. Generous: the walk takes well under a second.
    expect((globResult?.timestamp ?? Infinity) - (globStart?.timestamp ?? 0)).toBeLessThan(10_000);
  }, 90_000);
});
