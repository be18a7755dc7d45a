import type { ChatMessage, ChatRequest, ChatResponse, LlmModelConfig, StreamChunk } from '../llm/chat-request';
import type { LlmAdapter } from '../llm/llm-adapter';
import { LlmAnswerTooLargeError } from '../llm/llm-errors';
import { MISSING_TOOL_RESULT } from '../llm/tool-call-sequence';
import { BaseTool, type ToolCapabilities } from '../tool/tool';
import { ToolDispatcher } from '../tool/tool-dispatcher';
import { ToolRegistry } from '../tool/tool-registry';
import type { AgentEventListener } from './agent-event-listener';
import { AgentExecutionContext } from './agent-execution-context';
import { AgentLoop, type AgentRunPersistence } from './agent-loop';

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };

/** A tool that finishes when the test says so. */
class HeldTool extends BaseTool {
  private readonly releases = new Map<string, () => void>();
  constructor(private readonly name: string) {
    super();
  }
  getName(): string {
    return this.name;
  }
  getDescription(): string {
    return 'held';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  // Read-only, so the calls of a round run side by side.
  protected override capabilities(): ToolCapabilities {
    return { annotations: { readOnlyHint: true } };
  }
  release(): void {
    for (const release of this.releases.values()) release();
  }
  override execute(argumentsJson: string): Promise<string> {
    return new Promise((resolve) => this.releases.set(argumentsJson, () => resolve(`${this.name} done`)));
  }
}

/** A model that streams given chunks per round, then fails or ends. */
class ChunkModel implements LlmAdapter {
  readonly requests: ChatRequest[] = [];
  constructor(private readonly rounds: Array<{ chunks: StreamChunk[]; then?: Error }>) {}
  chat(): Promise<ChatResponse> {
    return Promise.reject(new Error('the loop only streams'));
  }
  async *stream(request: ChatRequest): AsyncIterable<StreamChunk> {
    this.requests.push(structuredClone(request));
    const round = this.rounds.shift() ?? { chunks: [{ contentDelta: 'done' }] };
    for (const chunk of round.chunks) yield chunk;
    if (round.then) throw round.then;
  }
}

class Events implements AgentEventListener {
  readonly log: string[] = [];
  onContentDelta(): void {}
  onToolCallStart(): void {}
  onToolCallResult(id: string): void {
    this.log.push(`result ${id}`);
  }
  onMessageEnd(): void {
    this.log.push('end');
  }
  onError(message: string): void {
    this.log.push(`error ${message}`);
  }
}

function toolCallChunk(index: number, id: string, name: string): StreamChunk {
  return { toolCallDeltas: [{ index, id, type: 'function', function: { name, arguments: JSON.stringify({ id }) } }] };
}

function setup(model: LlmAdapter, tools: BaseTool[] = [], messages: ChatMessage[] = [{ role: 'user', content: 'go' }]) {
  const registry = new ToolRegistry(tools);
  const loop = new AgentLoop({ llm: model, dispatcher: new ToolDispatcher({ registry }), registry, logger: { warn: () => undefined } });
  const context = new AgentExecutionContext({ sessionId: 1, modelConfig: MODEL, messages });
  return { loop, context };
}

describe('AgentLoop durability', () => {
  it('hands each result to the store as its call finishes, before the round is applied in call order', async () => {
    const slow = new HeldTool('slow');
    const fast = new HeldTool('fast');
    const model = new ChunkModel([{ chunks: [toolCallChunk(0, 'a', 'slow'), toolCallChunk(1, 'b', 'fast')] }, { chunks: [{ contentDelta: 'ok' }] }]);
    const { loop, context } = setup(model, [slow, fast]);
    const stored: string[] = [];
    const events = new Events();
    const persistence: AgentRunPersistence = {
      saveAssistantMessage: (message) => void stored.push(`assistant${message.tool_calls ? ' with calls' : ''}`),
      saveToolResult: (message) => void stored.push(`early ${message.tool_call_id}`),
      saveToolMessages: (messages) => void stored.push(`batch ${messages.map((m) => m.tool_call_id).join(',')}`),
    };

    const running = loop.execute(context, events, persistence);
    await new Promise((resolve) => setImmediate(resolve));
    fast.release();
    await new Promise((resolve) => setImmediate(resolve));
    // The fast call is stored although the slow one, first in the round, has not finished.
    expect(stored).toEqual(['assistant with calls', 'early b']);
    expect(events.log).toEqual([]);
    slow.release();
    await running;

    expect(stored).toEqual(['assistant with calls', 'early b', 'early a', 'batch a,b', 'assistant']);
    expect(events.log).toEqual(['result a', 'result b', 'end']);
  });

  it('sends the provider a conversation that answers every call, whatever the history holds', async () => {
    const model = new ChunkModel([{ chunks: [{ contentDelta: 'fine' }] }]);
    const history: ChatMessage[] = [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'x', type: 'function', function: { name: 'read_file', arguments: '{}' } }] },
      { role: 'user', content: 'second' },
    ];
    const { loop, context } = setup(model, [], history);

    await loop.execute(context, new Events());

    expect(model.requests[0].messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'first'],
      ['assistant', null],
      ['tool', MISSING_TOOL_RESULT],
      ['user', 'second'],
    ]);
  });

  it('keeps what was received of an answer stopped for its size, and ends with an error', async () => {
    const model = new ChunkModel([{ chunks: [{ contentDelta: 'a long ' }, { contentDelta: 'answer' }], then: new LlmAnswerTooLargeError('openai', 13) }]);
    const { loop, context } = setup(model);
    const stored: ChatMessage[] = [];
    const events = new Events();

    const outcome = await loop.execute(context, events, { saveAssistantMessage: (m) => void stored.push(m), saveToolMessages: () => undefined });

    expect(outcome.status).toBe('error');
    expect(stored).toEqual([{ role: 'assistant', content: 'a long answer' }]);
    expect(events.log).toEqual([`error ${outcome.error}`]);
    expect(outcome.error).toContain('LLM_MAX_ANSWER_CHARS = 13');
  });

  it('ends an interrupted run with an error naming why, not with a normal end', async () => {
    const held = new HeldTool('held');
    const model = new ChunkModel([{ chunks: [toolCallChunk(0, 'a', 'held')] }]);
    const { loop, context } = setup(model, [held]);
    const events = new Events();

    const running = loop.execute(context, events);
    await new Promise((resolve) => setImmediate(resolve));
    context.interrupt('the server is shutting down');
    const outcome = await running;

    expect(outcome).toEqual(expect.objectContaining({ status: 'interrupted', error: 'the server is shutting down' }));
    expect(events.log).toEqual(['result a', 'error the server is shutting down']);
  });
});
