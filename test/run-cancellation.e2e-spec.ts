import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readSlowServerRecord, requireBuiltSlowMcpServer, SLOW_MCP_SERVER } from './support/slow-mcp-server';
import { createSession, startRun, startTestHarness, waitUntil, type TestHarness } from './support/test-harness';

/**
 * A run's cancellation and its MCP server's progress, end to end: HTTP in, the loop, the
 * dispatcher, the MCP adapter, a real MCP server process, and the WebSocket out.
 */
describe('a run calling a slow MCP tool', () => {
  let t: TestHarness;
  let scratch: string;
  let record: string;

  beforeAll(() => requireBuiltSlowMcpServer());

  beforeEach(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-run-cancel-'));
    record = path.join(scratch, 'record.jsonl');
    t = await startTestHarness({
      extraMcpServers: [{ id: 2, name: 'slow', type: 'stdio', command: process.execPath, args: [SLOW_MCP_SERVER, '--record', record], callTimeoutMs: 1000 }],
    });
  });

  afterEach(async () => {
    await t.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('cancelled mid-call: the server is told, the run ends at once, the call is recorded with its duration', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [2] });
    const client = await t.connect();
    t.provider.script({ toolCalls: [{ id: 'call_slow', name: 'mcp__slow__work', arguments: { ms: 20_000, label: 'long job' } }] });
    const executionId = await startRun(t.userA, session.id, 'do the long job');
    await waitUntil(() => readSlowServerRecord(record).some((event) => event.event === 'started'), 'the MCP call started', 10_000);

    const cancelledAt = Date.now();
    expect((await t.userA.post(`/api/sessions/${session.id}/cancel`)).status).toBe(202);

    const last = await client.waitForRunEvent('message_end', executionId);
    expect(last.timestamp - cancelledAt).toBeLessThan(500);
    await waitUntil(() => readSlowServerRecord(record).some((event) => event.event === 'cancelled'), 'the MCP server heard of the cancel', 2_000);
    const cancelled = readSlowServerRecord(record).find((event) => event.event === 'cancelled');
    expect(cancelled!.at - cancelledAt).toBeLessThan(500);

    const result = client.runEvents(executionId).find((event) => event.type === 'tool_call_result');
    expect(result?.data).toEqual(expect.objectContaining({ tool_call_id: 'call_slow', status: 'error' }));
    const activities = (await t.userA.get(`/api/sessions/${session.id}/activities`)).body as Array<Record<string, unknown>>;
    expect(activities).toEqual([expect.objectContaining({ toolCallId: 'call_slow', status: 'ERROR', durationMs: expect.any(Number) })]);
    expect(activities[0].durationMs as number).toBeGreaterThan(0);
  });

  it('a long call that reports progress outlives its call timeout, and its watchers see the progress', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [2] });
    const client = await t.connect();
    t.provider.script(
      { toolCalls: [{ id: 'call_progress', name: 'mcp__slow__work', arguments: { ms: 2_500, progressEveryMs: 100 } }] },
      { content: 'finished' },
    );
    const executionId = await startRun(t.userA, session.id, 'take 2.5 s with a 1 s timeout');

    await client.waitForRunEvent('message_end', executionId, { timeoutMs: 10_000 });
    const events = client.runEvents(executionId);
    const result = events.find((event) => event.type === 'tool_call_result');
    expect(result?.data.status).toBe('success');
    const progress = events.filter((event) => event.type === 'tool_call_progress');
    // Reported every 100 ms for 2.5 s, sent at most every 250 ms: a handful, not 25.
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress.length).toBeLessThanOrEqual(13);
    expect(progress[0].data).toEqual(expect.objectContaining({ tool_call_id: 'call_progress', progress: expect.any(Number), executionId }));
    const values = progress.map((event) => event.data.progress as number);
    expect([...values].sort((a, b) => a - b)).toEqual(values);
    expect(events.indexOf(progress.at(-1)!)).toBeLessThan(events.indexOf(result!));
  });
});
