import { Gate } from './support/fake-openai-provider';
import { createSession, isAlive, startRun, startTestHarness, waitUntil, type TestHarness } from './support/test-harness';

describe("a session's MCP server process over a run", () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness({ mcpDemo: true, env: { HARNESS_MCP_IDLE_TIMEOUT_MS: '100' } });
  });

  afterEach(async () => {
    await t.close();
  });

  it('lives through a pause longer than the idle timeout inside a run, and is stopped once the session is idle', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [1] });
    const client = await t.connect();
    const thinking = new Gate();
    t.provider.script(
      { toolCalls: [{ id: 'call_pid_1', name: 'mcp__demo__pid', arguments: {} }] },
      // The model thinks for longer than HARNESS_MCP_IDLE_TIMEOUT_MS between two MCP calls.
      { content: 'Let me think…', gate: thinking, toolCalls: [{ id: 'call_pid_2', name: 'mcp__demo__pid', arguments: {} }] },
      { content: 'same process' },
    );
    const executionId = await startRun(t.userA, session.id, 'which process, twice?');
    await t.provider.waitForRequest(2);
    await new Promise<void>((resolve) => setTimeout(resolve, 400));
    thinking.release();
    await client.waitForRunEvent('message_end', executionId);

    const pids = client
      .runEvents(executionId)
      .filter((event) => event.type === 'tool_call_result')
      .map((event) => Number(event.data.result));
    expect(pids).toHaveLength(2);
    expect(Number.isInteger(pids[0])).toBe(true);
    expect(pids[1]).toBe(pids[0]);

    // The run is over: the idle clock runs, and the server process is stopped.
    await waitUntil(() => !isAlive(pids[0]), 'the idle MCP server process to stop');
  });
});
