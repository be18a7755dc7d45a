import type {
  ChatMessage,
  ChatRequest,
  ChatResponse,
  ChatUsage,
  LlmModelConfig,
  StreamChunk,
} from '../llm/chat-request';
import type { LlmAdapter } from '../llm/llm-adapter';
import { ScriptedLlmAdapter, type ScriptedRound } from '../llm/scripted-llm-adapter';
import { BaseTool, type Tool } from '../tool/tool';
import { ToolCallContext } from '../tool/tool-call-context';
import { ToolDispatcher } from '../tool/tool-dispatcher';
import { ToolRegistry } from '../tool/tool-registry';
import type { AgentEventListener } from './agent-event-listener';
import { AgentExecutionContext, type AgentExecutionContextOptions } from './agent-execution-context';
import { AgentLoop, TOOL_CANCELLED_RESULT, type AgentRunOutcome, type AgentRunPersistence } from './agent-loop';
import { BackgroundTaskManager } from './background-task-manager';

// The legacy spec of the agent loop. It drives a real ToolDispatcher over a registry of small fake
// tools, with a scripted model at the edge, and asserts only on what reached the model, the
// listener and the store, so it holds for any loop with the same observable behaviour.

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };
const SESSION_ID = 7;

// ---------------------------------------------------------------------------------------------
// Edge fakes: tools, the model, the listener, the store.
// ---------------------------------------------------------------------------------------------

type Args = Record<string, unknown>;

function fakeTool(name: string, run: (args: Args) => string | Promise<string>): Tool {
  return {
    getName: () => name,
    getDescription: () => `The ${name} tool`,
    getInputSchema: () => ({ type: 'object', properties: { text: { type: 'string' } } }),
    getOutputSchema: () => null,
    execute: (argumentsJson: string) => run(JSON.parse(argumentsJson) as Args),
  };
}

const echoTool = (): Tool => fakeTool('echo', (args) => String(args.text));
const upperTool = (): Tool => fakeTool('upper', (args) => String(args.text).toUpperCase());

/** Records every request exactly as it was when the model received it. */
class RecordingModel implements LlmAdapter {
  readonly requests: ChatRequest[] = [];
  constructor(private readonly inner: LlmAdapter) {}

  chat(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse> {
    this.requests.push(structuredClone(request));
    return this.inner.chat(request, config, signal);
  }

  stream(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamChunk> {
    this.requests.push(structuredClone(request));
    return this.inner.stream(request, config, signal);
  }
}

/** One answer of `ChunkModel`: chunks streamed a turn apart, then an end, a failure or a hang. */
interface ChunkAnswer {
  chunks: StreamChunk[];
  then?: 'end' | 'hang' | Error;
}

/** A model streaming hand-written chunks, for shapes the scripted model does not produce. */
class ChunkModel implements LlmAdapter {
  private calls = 0;
  constructor(private readonly answers: ChunkAnswer[]) {}

  chat(): Promise<ChatResponse> {
    return Promise.reject(new Error('ChunkModel only streams'));
  }

  async *stream(): AsyncGenerator<StreamChunk> {
    const answer = this.answers[this.calls++] ?? { chunks: [{ contentDelta: 'done' }] };
    for (const chunk of answer.chunks) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      yield chunk;
    }
    if (answer.then instanceof Error) throw answer.then;
    // Ignores any abort signal on purpose: the loop must not depend on the adapter honouring it.
    if (answer.then === 'hang') await new Promise<never>(() => undefined);
  }
}

type ListenerEvent =
  | ['content', string]
  | ['thinking_start']
  | ['thinking', string]
  | ['thinking_end']
  | ['start', string, string, string]
  | ['args', string, string]
  | ['result', string, string]
  | ['end', ChatUsage | null]
  | ['error', string];

/** Records listener calls as data; `on` hooks let a test act at a given moment. */
class RecordingListener implements AgentEventListener {
  readonly events: ListenerEvent[] = [];
  onResult?: (toolCallId: string) => void;
  onContent?: (delta: string) => void;
  onToolStart?: (toolCallId: string) => void;

  onContentDelta(delta: string): void {
    this.events.push(['content', delta]);
    this.onContent?.(delta);
  }
  onThinkingStart(): void {
    this.events.push(['thinking_start']);
  }
  onThinkingDelta(delta: string): void {
    this.events.push(['thinking', delta]);
  }
  onThinkingEnd(): void {
    this.events.push(['thinking_end']);
  }
  onToolCallStart(toolCallId: string, toolName: string, argumentsJson: string): void {
    this.events.push(['start', toolCallId, toolName, argumentsJson]);
    this.onToolStart?.(toolCallId);
  }
  onToolCallArgsDelta(toolCallId: string, argumentsDelta: string): void {
    this.events.push(['args', toolCallId, argumentsDelta]);
  }
  onToolCallResult = (toolCallId: string, result: string): void => {
    this.events.push(['result', toolCallId, result]);
    this.onResult?.(toolCallId);
  };
  onMessageEnd(usage: ChatUsage | null): void {
    this.events.push(['end', usage]);
  }
  onError(message: string): void {
    this.events.push(['error', message]);
  }

  results(): Array<[string, string]> {
    return this.events.filter((e) => e[0] === 'result').map((e) => [e[1] as string, e[2] as string]);
  }
  starts(): Array<[string, string]> {
    return this.events.filter((e) => e[0] === 'start').map((e) => [e[1] as string, e[2] as string]);
  }
  text(): string {
    return this.events.filter((e) => e[0] === 'content').map((e) => e[1]).join('');
  }
  ends(): ListenerEvent[] {
    return this.events.filter((e) => e[0] === 'end' || e[0] === 'error');
  }
}

/** The store: one entry per persistence call. */
class RecordingStore implements AgentRunPersistence {
  readonly batches: Array<{ kind: 'assistant'; messages: ChatMessage[] } | { kind: 'tools'; messages: ChatMessage[] }> = [];

  saveAssistantMessage(message: ChatMessage): void {
    this.batches.push({ kind: 'assistant', messages: [structuredClone(message)] });
  }
  saveToolMessages(messages: ChatMessage[]): void {
    this.batches.push({ kind: 'tools', messages: structuredClone(messages) });
  }

  /** Every stored message, in the order stored. */
  messages(): ChatMessage[] {
    return this.batches.flatMap((batch) => batch.messages);
  }
}

/** Every tool call of a stored assistant message is answered by a tool message before the next assistant message. */
function expectWellFormed(messages: ChatMessage[]): void {
  messages.forEach((message, index) => {
    for (const call of message.tool_calls ?? []) {
      const later = messages.slice(index + 1);
      const nextAssistant = later.findIndex((m) => m.role === 'assistant');
      const window = nextAssistant === -1 ? later : later.slice(0, nextAssistant);
      expect(window.filter((m) => m.role === 'tool' && m.tool_call_id === call.id)).toHaveLength(1);
    }
  });
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Setup {
  rounds?: ScriptedRound[];
  model?: LlmAdapter;
  tools?: Tool[];
  context?: Partial<AgentExecutionContextOptions>;
  backgroundTasks?: BackgroundTaskManager;
}

function setup(options: Setup = {}) {
  const registry = new ToolRegistry(options.tools ?? [echoTool(), upperTool()]);
  const model = new RecordingModel(options.model ?? new ScriptedLlmAdapter({ rounds: options.rounds ?? [] }));
  const warnings: string[] = [];
  const loop = new AgentLoop({
    llm: model,
    dispatcher: new ToolDispatcher({ registry, backgroundTasks: options.backgroundTasks ?? null }),
    registry,
    backgroundTasks: options.backgroundTasks,
    logger: { warn: (message) => warnings.push(message) },
  });
  const context = new AgentExecutionContext({
    sessionId: SESSION_ID,
    userId: 1,
    modelConfig: MODEL,
    systemPrompt: 'You are a test agent.',
    messages: [{ role: 'user', content: 'go' }],
    ...options.context,
  });
  const listener = new RecordingListener();
  const store = new RecordingStore();
  const run = (): Promise<AgentRunOutcome> => loop.execute(context, listener, store);
  return { loop, model, context, listener, store, warnings, run };
}

const toolMessage = (id: string, content: string): Partial<ChatMessage> => ({ role: 'tool', tool_call_id: id, content });

// ---------------------------------------------------------------------------------------------

describe('AgentLoop', () => {
  describe('when the model answers without tools', () => {
    it('streams the text, stores the answer and ends with the usage', async () => {
      const { run, model, listener, store } = setup({ rounds: [{ content: 'Hello there, friend.' }] });

      const outcome = await run();

      expect(outcome.status).toBe('completed');
      expect(outcome.rounds).toBe(1);
      expect(listener.text()).toBe('Hello there, friend.');
      expect(model.requests).toHaveLength(1);
      expect(model.requests[0].messages).toEqual([
        { role: 'system', content: 'You are a test agent.' },
        { role: 'user', content: 'go' },
      ]);
      expect(model.requests[0].sessionId).toBe(SESSION_ID);
      expect(store.messages()).toEqual([expect.objectContaining({ role: 'assistant', content: 'Hello there, friend.' })]);
      const ends = listener.ends();
      expect(ends).toHaveLength(1);
      expect(ends[0][0]).toBe('end');
      expect(ends[0][1]).toEqual(expect.objectContaining({ totalTokens: expect.any(Number) }));
      expect(outcome.usage).toEqual(ends[0][1]);
    });

    it('reports reasoning between thinking start and end, before the text', async () => {
      const { run, listener } = setup({ rounds: [{ thinking: 'Let me think.', content: 'Answer.' }] });

      await run();

      const kinds = listener.events.map((e) => e[0]);
      expect(kinds[0]).toBe('thinking_start');
      expect(kinds.filter((k) => k === 'thinking_start')).toHaveLength(1);
      expect(kinds.filter((k) => k === 'thinking_end')).toHaveLength(1);
      expect(kinds.indexOf('thinking_end')).toBeLessThan(kinds.indexOf('content'));
      expect(kinds.lastIndexOf('thinking')).toBeLessThan(kinds.indexOf('thinking_end'));
      const thinking = listener.events.filter((e) => e[0] === 'thinking').map((e) => e[1]).join('');
      expect(thinking).toBe('Let me think.');
    });
  });

  describe('when the model calls tools over several rounds', () => {
    it('feeds each round\'s results to the next model call and stores every message in order', async () => {
      const { run, model, listener, store, context } = setup({
        rounds: [
          { content: 'Echoing.', toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'hi' } }] },
          { toolCalls: [{ id: 'c2', name: 'upper', arguments: { text: 'loud' } }] },
          { content: 'All done.' },
        ],
      });

      const outcome = await run();

      expect(outcome).toEqual(expect.objectContaining({ status: 'completed', rounds: 3 }));
      expect(model.requests).toHaveLength(3);
      expect(model.requests[0].tools?.map((t) => t.function.name)).toEqual(['echo', 'upper']);
      expect(model.requests[0].tools?.[0]).toEqual({
        type: 'function',
        function: {
          name: 'echo',
          description: 'The echo tool',
          parameters: { type: 'object', properties: { text: { type: 'string' } } },
        },
      });

      const second = model.requests[1].messages;
      expect(second).toHaveLength(4);
      expect(second[2]).toEqual(
        expect.objectContaining({
          role: 'assistant',
          content: 'Echoing.',
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'echo', arguments: '{"text":"hi"}' } }],
        }),
      );
      expect(second[3]).toEqual(expect.objectContaining(toolMessage('c1', 'hi')));

      const third = model.requests[2].messages;
      expect(third.slice(0, 4)).toEqual(second);
      expect(third[4]).toEqual(expect.objectContaining({ role: 'assistant', content: null }));
      expect(third[4].tool_calls?.map((c) => c.id)).toEqual(['c2']);
      expect(third[5]).toEqual(expect.objectContaining(toolMessage('c2', 'LOUD')));

      expect(listener.results()).toEqual([
        ['c1', 'hi'],
        ['c2', 'LOUD'],
      ]);
      expect(store.batches.map((b) => b.kind)).toEqual(['assistant', 'tools', 'assistant', 'tools', 'assistant']);
      expect(store.messages().map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'tool', 'assistant']);
      expect(store.messages()[4].content).toBe('All done.');
      expect(context.messages.slice(2)).toEqual(store.messages());
      expect(listener.ends()).toEqual([['end', expect.any(Object)]]);
    });

    it('announces each call before its result and its result before the next round', async () => {
      const { run, listener } = setup({
        rounds: [{ toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { content: 'ok' }],
      });

      await run();

      const kinds = listener.events.map((e) => e[0]);
      expect(kinds.indexOf('start')).toBeLessThan(kinds.indexOf('result'));
      expect(kinds.indexOf('result')).toBeLessThan(kinds.indexOf('content'));
      const start = listener.events.find((e) => e[0] === 'start');
      const args = listener.events.filter((e) => e[0] === 'args' && e[1] === 'c1').map((e) => e[2]);
      expect(start?.slice(1, 3)).toEqual(['c1', 'echo']);
      expect((start?.[3] as string) + args.join('')).toBe('{"text":"x"}');
    });

    it('hands the session, user and workspace to the tool, running it as the execution user', async () => {
      class WhoTool extends BaseTool {
        getName(): string {
          return 'who';
        }
        getDescription(): string {
          return 'Says who runs it';
        }
        getInputSchema(): Record<string, unknown> {
          return { type: 'object' };
        }
        protected override executeWithUser(_args: string, sessionId: number | null, userId: number | null, workspace: string | null): string {
          return JSON.stringify({ sessionId, userId, workspace });
        }
      }
      const { run, listener } = setup({
        tools: [new WhoTool()],
        rounds: [{ toolCalls: [{ id: 'w1', name: 'who', arguments: {} }] }],
        context: { workspace: '/tmp/ws-of-7', executionUserId: 42 },
      });

      await run();

      expect(listener.results()).toEqual([['w1', JSON.stringify({ sessionId: SESSION_ID, userId: 42, workspace: '/tmp/ws-of-7' })]]);
    });

    it('offers and runs the session\'s own tools beside the registry\'s', async () => {
      const { run, model, listener } = setup({
        tools: [echoTool()],
        rounds: [{ toolCalls: [{ id: 's1', name: 'mcp__files__stat', arguments: { text: 'a.txt' } }] }],
        context: { sessionTools: [fakeTool('mcp__files__stat', (args) => `size of ${String(args.text)}: 3`)] },
      });

      await run();

      expect(model.requests[0].tools?.map((t) => t.function.name)).toEqual(['echo', 'mcp__files__stat']);
      expect(listener.results()).toEqual([['s1', 'size of a.txt: 3']]);
    });
  });

  describe('when a round has several calls', () => {
    it('runs them concurrently', async () => {
      let arrived = 0;
      const together = deferred();
      const rendezvous = fakeTool('rendezvous', async () => {
        arrived += 1;
        if (arrived === 2) together.resolve();
        let timer: NodeJS.Timeout | undefined;
        const alone = new Promise<string>((resolve) => {
          timer = setTimeout(() => resolve('alone'), 2000);
        });
        const result = await Promise.race([together.promise.then(() => 'met'), alone]);
        clearTimeout(timer);
        return result;
      });
      const { run, listener } = setup({
        tools: [rendezvous],
        rounds: [
          {
            toolCalls: [
              { id: 'r1', name: 'rendezvous' },
              { id: 'r2', name: 'rendezvous' },
            ],
          },
        ],
      });

      await run();

      expect(listener.results()).toEqual([
        ['r1', 'met'],
        ['r2', 'met'],
      ]);
    });

    it('lets every call see its own call id across awaits', async () => {
      const whoami = fakeTool('whoami', async () => {
        for (let i = 0; i < 3; i++) await pause(Math.floor(Math.random() * 8));
        return ToolCallContext.currentCallId() ?? 'none';
      });
      const ids = ['a1', 'a2', 'a3', 'a4', 'a5'];
      const { run, listener, model } = setup({
        tools: [whoami],
        rounds: [{ toolCalls: ids.map((id) => ({ id, name: 'whoami' })) }],
      });

      await run();

      expect(listener.results()).toEqual(ids.map((id) => [id, id]));
      const toolMessages = model.requests[1].messages.filter((m) => m.role === 'tool');
      expect(toolMessages.map((m) => [m.tool_call_id, m.content])).toEqual(ids.map((id) => [id, id]));
    });

    it('applies results in call order even when a later call finishes first', async () => {
      const finished: string[] = [];
      const fastDone = deferred();
      const slow = fakeTool('slow', async () => {
        await fastDone.promise;
        await pause(5);
        finished.push('slow');
        return 'slow result';
      });
      const fast = fakeTool('fast', () => {
        finished.push('fast');
        fastDone.resolve();
        return 'fast result';
      });
      const { run, listener, model, store } = setup({
        tools: [slow, fast],
        rounds: [
          {
            toolCalls: [
              { id: 'first', name: 'slow' },
              { id: 'second', name: 'fast' },
            ],
          },
        ],
      });

      await run();

      expect(finished).toEqual(['fast', 'slow']);
      expect(listener.results()).toEqual([
        ['first', 'slow result'],
        ['second', 'fast result'],
      ]);
      const sent = model.requests[1].messages.filter((m) => m.role === 'tool');
      expect(sent.map((m) => m.tool_call_id)).toEqual(['first', 'second']);
      const toolBatches = store.batches.filter((b) => b.kind === 'tools');
      expect(toolBatches).toHaveLength(1);
      expect(toolBatches[0].messages.map((m) => [m.tool_call_id, m.content])).toEqual([
        ['first', 'slow result'],
        ['second', 'fast result'],
      ]);
    });
  });

  describe('when a call fails', () => {
    it('refuses a tool outside the allowed set without running it', async () => {
      let secretRuns = 0;
      const secret = fakeTool('secret', () => {
        secretRuns += 1;
        return 'classified';
      });
      const { run, listener, model } = setup({
        tools: [echoTool(), secret],
        context: { allowedTools: ['echo'] },
        rounds: [{ toolCalls: [{ id: 'x1', name: 'secret', arguments: {} }] }, { content: 'sorry' }],
      });

      await run();

      expect(secretRuns).toBe(0);
      expect(model.requests[0].tools?.map((t) => t.function.name)).toEqual(['echo']);
      expect(listener.results()).toEqual([['x1', "Tool execution failed: tool 'secret' is not in the allowed tool set"]]);
      expect(model.requests[1].messages.at(-1)).toEqual(
        expect.objectContaining(toolMessage('x1', "Tool execution failed: tool 'secret' is not in the allowed tool set")),
      );
    });

    it('turns an error the tool throws into a result the model reads', async () => {
      const broken = fakeTool('broken', () => {
        throw new Error('disk on fire');
      });
      const rejecting = fakeTool('rejecting', () => Promise.reject(new Error('network down')));
      const { run, listener, model } = setup({
        tools: [broken, rejecting],
        rounds: [
          {
            toolCalls: [
              { id: 'b1', name: 'broken' },
              { id: 'b2', name: 'rejecting' },
            ],
          },
          { content: 'noted' },
        ],
      });

      const outcome = await run();

      expect(outcome.status).toBe('completed');
      expect(listener.results()).toEqual([
        ['b1', 'Tool execution failed: disk on fire'],
        ['b2', 'Tool execution failed: network down'],
      ]);
      expect(model.requests[1].messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
        'Tool execution failed: disk on fire',
        'Tool execution failed: network down',
      ]);
    });

    it('reports an unknown tool to the model', async () => {
      const { run, listener } = setup({ rounds: [{ toolCalls: [{ id: 'u1', name: 'nope', arguments: {} }] }] });

      await run();

      expect(listener.results()).toEqual([['u1', 'Tool execution failed: Unknown tool: nope']]);
    });

    it('passes a tool\'s own error result through unchanged', async () => {
      const picky: Tool = { ...fakeTool('picky', () => ''), execute: () => JSON.stringify({ error: 'text: expected a string' }) };
      const { run, listener } = setup({ tools: [picky], rounds: [{ toolCalls: [{ id: 'p1', name: 'picky', arguments: '{not json' }] }] });

      await run();

      expect(listener.results()).toEqual([['p1', '{"error":"text: expected a string"}']]);
    });
  });

  describe('when tool calls arrive in fragments', () => {
    it('announces each call once, with its full name, before its argument fragments', async () => {
      const model = new ChunkModel([
        {
          chunks: [
            { toolCallDeltas: [{ index: 0, function: { name: 'ec' } }] },
            { toolCallDeltas: [{ index: 0, id: 'call_a', function: { name: 'ho' } }] },
            { toolCallDeltas: [{ index: 0, id: 'call_a', function: { arguments: '{"text":' } }] },
            { toolCallDeltas: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'upper', arguments: '' } }] },
            { toolCallDeltas: [{ index: 0, function: { arguments: '"one"}' } }] },
            { toolCallDeltas: [{ index: 1, function: { arguments: '{"text":"two"}' } }] },
            { finishReason: 'tool_calls' },
          ],
        },
        { chunks: [{ contentDelta: 'finished' }] },
      ]);
      const { run, listener, model: recorded } = setup({ model });

      await run();

      expect(listener.starts()).toEqual([
        ['call_a', 'echo'],
        ['call_b', 'upper'],
      ]);
      for (const id of ['call_a', 'call_b']) {
        const startAt = listener.events.findIndex((e) => e[0] === 'start' && e[1] === id);
        const firstArgs = listener.events.findIndex((e) => e[0] === 'args' && e[1] === id);
        if (firstArgs !== -1) expect(startAt).toBeLessThan(firstArgs);
      }
      const argsOf = (id: string): string => {
        const start = listener.events.find((e) => e[0] === 'start' && e[1] === id) as ['start', string, string, string];
        const deltas = listener.events.filter((e) => e[0] === 'args' && e[1] === id).map((e) => e[2]);
        return start[3] + deltas.join('');
      };
      expect(argsOf('call_a')).toBe('{"text":"one"}');
      expect(argsOf('call_b')).toBe('{"text":"two"}');
      expect(listener.results()).toEqual([
        ['call_a', 'one'],
        ['call_b', 'TWO'],
      ]);
      expect(recorded.requests[1].messages[2].tool_calls).toEqual([
        { id: 'call_a', type: 'function', function: { name: 'echo', arguments: '{"text":"one"}' } },
        { id: 'call_b', type: 'function', function: { name: 'upper', arguments: '{"text":"two"}' } },
      ]);
    });

    it('tells calls apart by id when a provider streams them all at index 0', async () => {
      const model = new ChunkModel([
        {
          chunks: [
            { toolCallDeltas: [{ index: 0, id: 'x1', function: { name: 'echo', arguments: '{"text":"a"}' } }] },
            { toolCallDeltas: [{ index: 0, id: 'x2', function: { name: 'echo', arguments: '{"text":' } }] },
            { toolCallDeltas: [{ index: 0, id: 'x2', function: { arguments: '"b"}' } }] },
          ],
        },
      ]);
      const { run, listener } = setup({ model });

      await run();

      expect(listener.starts()).toEqual([
        ['x1', 'echo'],
        ['x2', 'echo'],
      ]);
      expect(listener.results()).toEqual([
        ['x1', 'a'],
        ['x2', 'b'],
      ]);
    });

    it('gives a call without an id one, used alike by its start, its result and the stored messages', async () => {
      const model = new ChunkModel([
        { chunks: [{ toolCallDeltas: [{ index: 0, function: { name: 'echo', arguments: '{"text":"anon"}' } }] }] },
      ]);
      const { run, listener, store } = setup({ model });

      await run();

      const [[id, name]] = listener.starts();
      expect(name).toBe('echo');
      expect(id).not.toBe('');
      expect(listener.results()).toEqual([[id, 'anon']]);
      expect(store.messages()[0].tool_calls?.[0].id).toBe(id);
      expect(store.messages()[1]).toEqual(expect.objectContaining(toolMessage(id, 'anon')));
    });
  });

  describe('when a listener throws', () => {
    it('still runs the tools, feeds the model and stores everything', async () => {
      const { loop, model, context, store, warnings } = setup({
        rounds: [{ thinking: 'hmm', content: 'Calling.', toolCalls: [{ id: 't1', name: 'echo', arguments: { text: 'safe' } }] }, { content: 'end' }],
      });
      const fail = (): never => {
        throw new Error('listener exploded');
      };
      const throwing: AgentEventListener = {
        onContentDelta: fail,
        onThinkingStart: fail,
        onThinkingDelta: fail,
        onThinkingEnd: fail,
        onToolCallStart: fail,
        onToolCallArgsDelta: fail,
        onToolCallResult: fail,
        onMessageEnd: fail,
        onError: fail,
      };

      const outcome = await loop.execute(context, throwing, store);

      expect(outcome.status).toBe('completed');
      expect(outcome.rounds).toBe(2);
      expect(model.requests[1].messages.at(-1)).toEqual(expect.objectContaining(toolMessage('t1', 'safe')));
      expect(store.messages().map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
      expect(warnings.length).toBeGreaterThan(0);
    });
  });

  describe('when the run is cancelled', () => {
    it('before it starts, makes no model call', async () => {
      const { run, model, context, store } = setup({ rounds: [{ content: 'never' }] });
      context.cancel();

      const outcome = await run();

      expect(outcome.status).toBe('cancelled');
      expect(outcome.rounds).toBe(0);
      expect(model.requests).toHaveLength(0);
      expect(store.batches).toHaveLength(0);
    });

    it('between rounds, keeps the finished round and starts no other', async () => {
      const { run, model, context, listener, store } = setup({
        rounds: [{ toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'kept' } }] }, { content: 'unreachable' }],
      });
      listener.onResult = () => context.cancel();

      const outcome = await run();

      expect(outcome.status).toBe('cancelled');
      expect(outcome.rounds).toBe(1);
      expect(model.requests).toHaveLength(1);
      expect(store.messages()).toEqual([
        expect.objectContaining({ role: 'assistant' }),
        expect.objectContaining(toolMessage('c1', 'kept')),
      ]);
      expect(listener.ends()).toEqual([['end', expect.anything()]]);
      expect(listener.events.some((e) => e[0] === 'error')).toBe(false);
    });

    it('during a slow tool, answers every call so the stored conversation stays well-formed', async () => {
      const slowStarted = deferred();
      const release = deferred();
      const slow = fakeTool('slow', async () => {
        // A turn of the event loop, so the quick calls beside it have surely finished.
        await new Promise<void>((resolve) => setImmediate(resolve));
        slowStarted.resolve();
        await release.promise;
        return 'too late';
      });
      const { run, model, context, listener, store } = setup({
        tools: [echoTool(), slow],
        rounds: [
          {
            toolCalls: [
              { id: 'q1', name: 'echo', arguments: { text: 'quick' } },
              { id: 's1', name: 'slow', arguments: {} },
              { id: 'q2', name: 'echo', arguments: { text: 'also quick' } },
            ],
          },
          { content: 'unreachable' },
        ],
      });

      const running = run();
      await slowStarted.promise;
      context.cancel();
      const outcome = await running;
      release.resolve();

      expect(outcome.status).toBe('cancelled');
      expect(model.requests).toHaveLength(1);
      const expected = [
        ['q1', 'quick'],
        ['s1', TOOL_CANCELLED_RESULT],
        ['q2', 'also quick'],
      ];
      expect(listener.results()).toEqual(expected);
      expectWellFormed(store.messages());
      expect(store.messages().filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, m.content])).toEqual(expected);
    });

    it('while the model streams, stops at once even if the model ignores the signal', async () => {
      const model = new ChunkModel([{ chunks: [{ contentDelta: 'Hel' }], then: 'hang' }]);
      const { run, context, listener, store } = setup({ model });
      listener.onContent = () => context.cancel();

      const outcome = await run();

      expect(outcome).toEqual(expect.objectContaining({ status: 'cancelled', rounds: 1 }));
      expect(store.messages()).toEqual([expect.objectContaining({ role: 'assistant', content: 'Hel' })]);
      expect(store.messages()[0].tool_calls).toBeUndefined();
      expect(listener.ends()).toHaveLength(1);
    });

    it('while a tool call streams, runs none of the round\'s calls', async () => {
      let runs = 0;
      const counted = fakeTool('counted', () => {
        runs += 1;
        return 'ran';
      });
      const { run, context, listener, store } = setup({
        tools: [counted],
        rounds: [{ toolCalls: [{ id: 'k1', name: 'counted', arguments: { text: 'a long argument string' } }] }],
      });
      listener.onToolStart = () => context.cancel();

      const outcome = await run();

      expect(outcome.status).toBe('cancelled');
      expect(runs).toBe(0);
      expectWellFormed(store.messages());
    });

    it('as the answer ends, runs none of its calls and still answers each', async () => {
      let runs = 0;
      const counted: Tool = {
        ...fakeTool('counted', () => ''),
        execute: () => {
          runs += 1;
          return 'ran';
        },
      };
      const model = new ChunkModel([{ chunks: [{ toolCallDeltas: [{ index: 0, id: 'k1', function: { name: 'counted' } }] }] }]);
      const { run, context, listener, store } = setup({ tools: [counted], model });
      listener.onToolStart = () => context.cancel();

      const outcome = await run();

      expect(outcome.status).toBe('cancelled');
      expect(runs).toBe(0);
      expect(listener.results()).toEqual([['k1', TOOL_CANCELLED_RESULT]]);
      expect(store.messages()).toEqual([
        expect.objectContaining({ role: 'assistant', tool_calls: [expect.objectContaining({ id: 'k1' })] }),
        expect.objectContaining(toolMessage('k1', TOOL_CANCELLED_RESULT)),
      ]);
    });
  });

  describe('when the store fails', () => {
    it('ends the run with an error naming the failure', async () => {
      const { loop, context, listener, model } = setup({
        rounds: [{ toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { content: 'unreachable' }],
      });
      const failingStore: AgentRunPersistence = {
        saveAssistantMessage: () => undefined,
        saveToolMessages: () => Promise.reject(new Error('database is locked')),
      };

      const outcome = await loop.execute(context, listener, failingStore);

      expect(outcome.status).toBe('error');
      expect(outcome.error).toContain('database is locked');
      expect(model.requests).toHaveLength(1);
      const ends = listener.ends();
      expect(ends).toHaveLength(1);
      expect(ends[0][0]).toBe('error');
      expect(ends[0][1]).toContain('database is locked');
    });
  });

  describe('when the model keeps calling tools', () => {
    it('stops after the maximum number of rounds with an error', async () => {
      const rounds: ScriptedRound[] = [1, 2, 3, 4].map((n) => ({ toolCalls: [{ id: `m${n}`, name: 'echo', arguments: { text: `${n}` } }] }));
      const { run, model, listener, store } = setup({ rounds, context: { maxRounds: 3 } });

      const outcome = await run();

      expect(outcome.status).toBe('max_rounds');
      expect(outcome.rounds).toBe(3);
      expect(model.requests).toHaveLength(3);
      const ends = listener.ends();
      expect(ends).toHaveLength(1);
      expect(ends[0][0]).toBe('error');
      expect(listener.results().map(([id]) => id)).toEqual(['m1', 'm2', 'm3']);
      expectWellFormed(store.messages());
    });
  });

  describe('when the model fails', () => {
    it('reports the error once and stores nothing of the broken answer', async () => {
      const model = new ChunkModel([{ chunks: [{ contentDelta: 'partial ' }], then: new Error('openai: 500 Internal Server Error') }]);
      const { run, listener, store } = setup({ model });

      const outcome = await run();

      expect(outcome.status).toBe('error');
      expect(outcome.error).toBe('openai: 500 Internal Server Error');
      expect(listener.ends()).toEqual([['error', 'openai: 500 Internal Server Error']]);
      expect(store.batches).toHaveLength(0);
    });

    it('after a tool round, keeps the stored conversation well-formed', async () => {
      const model = new ChunkModel([
        { chunks: [{ toolCallDeltas: [{ index: 0, id: 'e1', function: { name: 'echo', arguments: '{"text":"x"}' } }] }] },
        { chunks: [], then: new Error('anthropic: overloaded') },
      ]);
      const { run, listener, store } = setup({ model });

      const outcome = await run();

      expect(outcome).toEqual(expect.objectContaining({ status: 'error', rounds: 2 }));
      expect(listener.results()).toEqual([['e1', 'x']]);
      expectWellFormed(store.messages());
      expect(listener.ends()).toEqual([['error', 'anthropic: overloaded']]);
    });
  });

  describe('when background tasks finish', () => {
    it('brings a result that finished during a round to the model at the next round, once', async () => {
      const background = new BackgroundTaskManager();
      const startJob = fakeTool('start_job', async () => {
        const taskId = background.start(SESSION_ID, 'shell: make build', Promise.resolve('build ok'));
        // Lets the job settle before the round ends, as a quick job would.
        await new Promise<void>((resolve) => setImmediate(resolve));
        return JSON.stringify({ status: 'started', task_id: taskId });
      });
      const { run, model, store } = setup({
        tools: [startJob, echoTool()],
        backgroundTasks: background,
        rounds: [
          { toolCalls: [{ id: 'j1', name: 'start_job', arguments: {} }] },
          { toolCalls: [{ id: 'j2', name: 'echo', arguments: { text: 'next' } }] },
          { content: 'done' },
        ],
      });

      await run();

      const mentions = (request: ChatRequest): ChatMessage[] =>
        request.messages.filter((m) => m.role === 'user' && (m.content ?? '').includes('build ok'));
      expect(mentions(model.requests[0])).toHaveLength(0);
      const [injected] = mentions(model.requests[1]);
      expect(injected.content).toContain('bg-1');
      expect(injected.content).toContain('shell: make build');
      expect(model.requests[1].messages.at(-1)).toBe(injected);
      expect(model.requests[1].messages.at(-2)).toEqual(expect.objectContaining({ role: 'tool', tool_call_id: 'j1' }));
      expect(mentions(model.requests[2])).toHaveLength(1);
      expect(store.messages().filter((m) => m.role === 'user' && (m.content ?? '').includes('build ok'))).toHaveLength(1);
      expectWellFormed(store.messages());
    });

    it('brings a result that finished before the run to its first round', async () => {
      const background = new BackgroundTaskManager();
      background.start(SESSION_ID, 'shell: npm test', Promise.resolve('{"exit_code":0}'));
      background.start(SESSION_ID + 1, 'shell: other session', Promise.resolve('not ours'));
      await new Promise<void>((resolve) => setImmediate(resolve));
      const { run, model } = setup({ backgroundTasks: background, rounds: [{ content: 'seen' }] });

      await run();

      const contents = model.requests[0].messages.map((m) => m.content ?? '');
      expect(contents.filter((c) => c.includes('{"exit_code":0}'))).toHaveLength(1);
      expect(contents.some((c) => c.includes('not ours'))).toBe(false);
      expect(background.drainCompleted(SESSION_ID + 1)).toHaveLength(1);
    });
  });
});
