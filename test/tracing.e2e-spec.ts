import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { parentIdOf, SpanRecorder } from '../src/harness/runtime/testing/span-recorder';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';

/**
 * OpenTelemetry GenAI spans of a whole run, through the real server (HTTP, the OpenAI-compatible
 * fake model, the dispatcher, the store): one `invoke_agent` span per run, with a `chat` span per
 * model call and an `execute_tool` span per tool call beneath it (docs/observability.md).
 */
describe('tracing a run', () => {
  let t: TestHarness;
  const provider = new SpanRecorder();

  beforeAll(async () => {
    provider.install();
    t = await startTestHarness();
  });

  afterAll(async () => {
    await t.close();
    provider.uninstall();
  });

  it('records the run, each model call and each tool call, nested, with the GenAI attributes', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script(
      {
        toolCalls: [
          { id: 'call_list', name: 'task_list', arguments: {} },
          { id: 'call_missing', name: 'read_file', arguments: { path: 'missing.txt' } },
        ],
      },
      { content: 'Nothing to do.' },
    );
    const executionId = await startRun(t.userA, session.id, 'what is left to do?');
    await client.waitForRunEvent('message_end', executionId);

    const [run] = provider.named('invoke_agent');
    expect(run).toEqual(
      expect.objectContaining({
        name: 'invoke_agent harness',
        kind: SpanKind.INTERNAL,
        ended: true,
        instrumentationScope: expect.objectContaining({ name: 'harness' }),
        attributes: expect.objectContaining({
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': 'harness',
          'gen_ai.conversation.id': String(session.id),
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'fake-model',
          'harness.execution_id': executionId,
          'harness.run.status': 'completed',
          'harness.run.rounds': 2,
          // The fake model reports 100 × n input and 10 × n output tokens for its n-th request.
          'gen_ai.usage.input_tokens': 300,
          'gen_ai.usage.output_tokens': 30,
        }),
      }),
    );
    expect(run.status?.code).not.toBe(SpanStatusCode.ERROR);

    const chats = provider.named('chat ');
    const runId = run.spanContext().spanId;
    expect(chats.map((span) => [span.name, span.kind, parentIdOf(span), span.ended])).toEqual([
      ['chat fake-model', SpanKind.CLIENT, runId, true],
      ['chat fake-model', SpanKind.CLIENT, runId, true],
    ]);
    expect(chats.map((span) => span.attributes['gen_ai.response.finish_reasons'])).toEqual([['tool_calls'], ['stop']]);
    expect(chats[0].attributes).toEqual(
      expect.objectContaining({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.usage.input_tokens': 100, 'gen_ai.usage.output_tokens': 10 }),
    );

    const tools = provider.named('execute_tool');
    expect(tools.map((span) => [span.name, parentIdOf(span), span.attributes['gen_ai.tool.call.id'], span.status.code, span.attributes['harness.tool.status']])).toEqual([
      ['execute_tool task_list', runId, 'call_list', SpanStatusCode.UNSET, 'success'],
      ['execute_tool read_file', runId, 'call_missing', SpanStatusCode.ERROR, 'error'],
    ]);
    // The duration is the ToolResult's, measured where the tool ran.
    for (const span of tools) expect(span.attributes['harness.tool.duration_ms']).toEqual(expect.any(Number));
    expect(tools[1].attributes).toEqual(
      expect.objectContaining({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'read_file', 'gen_ai.tool.type': 'function', 'error.type': 'tool_error' }),
    );
  });

  it('marks a run that failed with the error', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script({ error: { status: 400, message: 'model refused' } });
    const executionId = await startRun(t.userA, session.id, 'fail, please');
    await client.waitForRunEvent('error', executionId);
    await new Promise((resolve) => setTimeout(resolve, 50));

    const run = provider.named('invoke_agent').find((span) => span.attributes['harness.execution_id'] === executionId);
    expect(run?.attributes).toEqual(expect.objectContaining({ 'harness.run.status': 'error', 'error.type': 'error' }));
    expect(run?.status).toEqual(expect.objectContaining({ code: SpanStatusCode.ERROR, message: expect.stringContaining('model refused') }));
    const chat = provider.named('chat ').find((span) => parentIdOf(span) === run?.spanContext().spanId);
    expect(chat?.status?.code).toBe(SpanStatusCode.ERROR);
    expect(chat?.attributes['error.type']).toEqual(expect.any(String));
  });
});
