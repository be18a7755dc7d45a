import * as fs from 'node:fs';
import * as path from 'node:path';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';

/**
 * A built-in tool says whether it failed; nothing on a result's way — dispatcher, agent loop,
 * WebSocket listener, activity record — parses its text to find out. A large JSON result parsed
 * even once is a stall for every session of the process, and a file that merely looks like an
 * error is not one.
 */
describe('the status and cost of a built-in tool result', () => {
  let t: TestHarness;

  afterEach(async () => {
    jest.restoreAllMocks();
    await t.close();
  });

  async function readWithSpy(fileContent: string | null, toolPath = 'big.json') {
    t = await startTestHarness({
      env: {
        LLM_PROTOCOL: 'scripted',
        LLM_SCRIPT: JSON.stringify({ rounds: [{ toolCalls: [{ id: 'call_read', name: 'read_file', arguments: { path: toolPath } }] }, { content: 'read it' }] }),
      },
    });
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'big' });
    if (fileContent !== null) fs.writeFileSync(path.join(t.workspaceRoot, 'user-1', 'big', toolPath), fileContent);
    const client = await t.connect();
    const parse = jest.spyOn(JSON, 'parse');
    const executionId = await startRun(t.userA, session.id, 'read the file');
    const result = await client.waitForRunEvent('tool_call_result', executionId);
    await client.waitForRunEvent('message_end', executionId);
    const parses = parse.mock.calls.map(([text]) => String(text));
    parse.mockRestore();
    const activities = (await t.userA.get<Array<Record<string, unknown>>>(`/api/sessions/${session.id}/activities`)).body;
    return { session, result, parses, activities };
  }

  it('reads a ~1 MB file whose JSON has an error key as a success, budgeted, without parsing it', async () => {
    const content = JSON.stringify({ error: 'only data', rows: Array.from({ length: 12_000 }, (_, i) => ({ id: i, name: `row ${i}` })) });
    expect(content.length).toBeGreaterThan(200_000);
    const { session, result, parses, activities } = await readWithSpy(content);

    expect(result.data.status).toBe('success');
    const shown = String(result.data.result);
    expect(shown.length).toBeLessThan(51_000);
    expect(shown.startsWith(content.slice(0, 30_000))).toBe(true);
    expect(shown).toContain(`of ${content.length} characters omitted`);
    expect(shown).toContain('.harness/tool-output/call_read.txt');
    expect(fs.readFileSync(path.join(t.workspaceRoot, 'user-1', 'big', '.harness', 'tool-output', 'call_read.txt'), 'utf8')).toBe(content);
    const [attachment] = result.data.attachments as Array<{ id: string; bytes: number }>;
    expect(attachment.bytes).toBe(Buffer.byteLength(content));
    const full = await fetch(`${t.url}/api/sessions/${session.id}/attachments/${attachment.id}`, { headers: { authorization: 'Bearer tok-a' } });
    expect(await full.text()).toBe(content);
    expect(parses.filter((text) => text === content || text === shown)).toEqual([]);
    expect(activities.map((activity) => activity.status)).toEqual(['SUCCESS']);
  });

  it('reports a failing built-in tool as an error with its message, without parsing its text', async () => {
    const { result, parses, activities } = await readWithSpy(null, 'missing.json');
    expect(result.data.status).toBe('error');
    expect(String(result.data.result)).toContain('missing.json');
    expect(parses.filter((text) => text === result.data.result)).toEqual([]);
    expect(activities).toEqual([expect.objectContaining({ status: 'ERROR', errorMessage: expect.stringContaining('missing.json') })]);
  });
});
