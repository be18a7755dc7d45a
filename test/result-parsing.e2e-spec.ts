import * as fs from 'node:fs';
import * as path from 'node:path';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';

/**
 * A tool result is parsed at most once on its whole way — dispatcher, agent loop, WebSocket
 * listener, activity record — because its status travels as meta instead of being re-derived.
 * A large JSON result makes every extra parse a stall for every session of the process.
 */
describe('the cost of a large tool result', () => {
  let t: TestHarness;

  afterEach(async () => {
    jest.restoreAllMocks();
    await t.close();
  });

  it.each<[string, unknown, string]>([
    ['a success', { rows: Array.from({ length: 12_000 }, (_, i) => ({ id: i, name: `row ${i}`, tags: ['a', 'b'] })) }, 'success'],
    ['an error', { error: 'the export is incomplete', rows: Array.from({ length: 12_000 }, (_, i) => ({ id: i, name: `row ${i}` })) }, 'error'],
  ])('parses %s of ~1 MB once between the dispatcher and the activity record', async (_label, document, status) => {
    t = await startTestHarness({
      env: {
        LLM_PROTOCOL: 'scripted',
        LLM_SCRIPT: JSON.stringify({ rounds: [{ toolCalls: [{ id: 'call_big', name: 'read_file', arguments: { path: 'big.json' } }] }, { content: 'read it' }] }),
      },
    });
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'big' });
    const content = JSON.stringify(document);
    expect(content.length).toBeGreaterThan(200_000);
    expect(content.length).toBeLessThan(1024 * 1024);
    fs.writeFileSync(path.join(t.workspaceRoot, 'user-1', 'big', 'big.json'), content);
    const client = await t.connect();

    const parse = jest.spyOn(JSON, 'parse');
    const executionId = await startRun(t.userA, session.id, 'read the big file');
    const result = await client.waitForRunEvent('tool_call_result', executionId);
    await client.waitForRunEvent('message_end', executionId);
    const parsesOfTheResult = parse.mock.calls.filter(([text]) => text === content).length;
    parse.mockRestore();

    expect(result.data.status).toBe(status);
    expect(result.data.result).toBe(content);
    expect(parsesOfTheResult).toBe(1);
    const activities = (await t.userA.get<Array<{ status: string }>>(`/api/sessions/${session.id}/activities`)).body;
    expect(activities.map((activity) => activity.status)).toEqual([status.toUpperCase()]);
  });
});
