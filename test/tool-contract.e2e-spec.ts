import { BaseTool } from '../src/harness/tool/tool';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';

/** A product tool that fails by throwing, as third-party code does. */
class FlakyTool extends BaseTool {
  getName(): string {
    return 'flaky_lookup';
  }
  getDescription(): string {
    return 'Looks something up; today it throws.';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object', properties: {} };
  }
  protected override executeWithUser(): string {
    throw new Error('lookup service unreachable');
  }
}

interface ActivityView {
  toolCallId: string;
  toolName: string;
  status: string;
  durationMs?: number;
  errorMessage?: string;
}

/** The strings the model has always received for these calls (baseline behaviour). */
const BASELINE_CONTENT = {
  thrown: 'Tool execution failed: lookup service unreachable',
  unknown: 'Tool execution failed: Unknown tool: no_such_tool',
  refused: "Tool execution failed: tool 'shell' is not in the allowed tool set",
};

describe('tool results as facts, end to end', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness({ tools: [new FlakyTool()] });
  });

  afterEach(async () => {
    await t.close();
  });

  it('shows a thrown error, an unknown tool and a refused tool as errors, with the content the model always had', async () => {
    const session = await createSession(t.userA, {
      executionMode: 'CLOUD',
      permissionLevel: 'FULL',
      tools: ['read_file', 'glob', 'flaky_lookup'],
    });
    t.provider.script(
      {
        toolCalls: [
          { id: 'call_thrown', name: 'flaky_lookup', arguments: {} },
          { id: 'call_unknown', name: 'no_such_tool', arguments: {} },
          { id: 'call_refused', name: 'shell', arguments: { command: 'ls' } },
          { id: 'call_fine', name: 'glob', arguments: { pattern: '*' } },
        ],
      },
      { content: 'Three of those failed.' },
    );
    const client = await t.connect();
    const executionId = await startRun(t.userA, session.id, 'try the tools');
    await client.waitForRunEvent('message_end', executionId);

    const results = client.events
      .filter((event) => event.type === 'tool_call_result' && event.data.executionId === executionId)
      .map((event) => [event.data.tool_call_id, event.data.status, event.data.result]);
    expect(results).toEqual([
      ['call_thrown', 'error', BASELINE_CONTENT.thrown],
      ['call_unknown', 'error', expect.any(String)],
      ['call_refused', 'error', BASELINE_CONTENT.refused],
      ['call_fine', 'success', expect.any(String)],
    ]);

    // The model read exactly the baseline's strings.
    const second = await t.provider.waitForRequest(2);
    const toolContent = Object.fromEntries(
      second.body.messages.filter((message) => message.role === 'tool').map((message) => [message.tool_call_id, message.content]),
    );
    expect(toolContent).toEqual({
      call_thrown: BASELINE_CONTENT.thrown,
      call_unknown: BASELINE_CONTENT.refused.replace('shell', 'no_such_tool'),
      call_refused: BASELINE_CONTENT.refused,
      call_fine: expect.any(String),
    });

    const activities = (await t.userA.get<ActivityView[]>(`/api/sessions/${session.id}/activities`)).body;
    expect(activities.map((activity) => [activity.toolCallId, activity.status])).toEqual([
      ['call_thrown', 'ERROR'],
      ['call_unknown', 'ERROR'],
      ['call_refused', 'ERROR'],
      ['call_fine', 'SUCCESS'],
    ]);
    for (const activity of activities) expect(activity.durationMs).toEqual(expect.any(Number));
    expect(activities[0].errorMessage).toBe('lookup service unreachable');
    expect(activities[2].errorMessage).toBe("tool 'shell' is not in the allowed tool set");

    // The stored tool messages are what the model read.
    const stored = (await t.userA.get<Array<{ role: string; toolCallId?: string; content: string }>>(`/api/sessions/${session.id}/messages`)).body;
    for (const message of stored.filter((m) => m.role === 'tool')) {
      expect(message.content).toBe(toolContent[message.toolCallId ?? '']);
    }
  });

  it('reaches the unknown-tool path when the session allows every tool', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    t.provider.script({ toolCalls: [{ id: 'call_unknown', name: 'no_such_tool', arguments: {} }] }, { content: 'ok' });
    const client = await t.connect();
    const executionId = await startRun(t.userA, session.id, 'call something that does not exist');
    const result = await client.waitForRunEvent('tool_call_result', executionId);
    expect(result.data).toEqual(expect.objectContaining({ status: 'error', result: BASELINE_CONTENT.unknown }));
    const second = await t.provider.waitForRequest(2);
    expect(second.body.messages.at(-1)).toEqual(expect.objectContaining({ role: 'tool', tool_call_id: 'call_unknown', content: BASELINE_CONTENT.unknown }));
    await client.waitForRunEvent('message_end', executionId);
    const [activity] = (await t.userA.get<ActivityView[]>(`/api/sessions/${session.id}/activities`)).body;
    expect(activity).toEqual(expect.objectContaining({ status: 'ERROR', errorMessage: 'Unknown tool: no_such_tool', durationMs: expect.any(Number) }));
  });

  it('lists tools by their descriptors', async () => {
    const tools = (await t.userA.get<Array<Record<string, unknown>>>('/api/tools')).body;
    expect(tools).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'read_file', source: 'builtin', executor: 'server' }),
        expect.objectContaining({ name: 'flaky_lookup', source: 'builtin', executor: 'server' }),
      ]),
    );
  });
});
