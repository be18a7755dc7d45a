import type { ChatResponse, LlmModelConfig, StreamChunk } from '../llm/chat-request';
import type { LlmAdapter } from '../llm/llm-adapter';
import { ScriptedLlmAdapter } from '../llm/scripted-llm-adapter';
import { ToolDispatcher } from '../tool/tool-dispatcher';
import { ToolRegistry } from '../tool/tool-registry';
import type { AgentEventListener } from './agent-event-listener';
import { AgentExecutionContext } from './agent-execution-context';
import { AgentLoop } from './agent-loop';

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };

function contextFor(): AgentExecutionContext {
  return new AgentExecutionContext({
    sessionId: 5,
    userId: 1,
    executionMode: 'CLOUD',
    workspace: '/ws',
    permissionLevel: 'FULL',
    modelConfig: MODEL,
    messages: [{ role: 'user', content: 'go' }],
  });
}

function loopOver(llm: LlmAdapter): AgentLoop {
  const registry = new ToolRegistry([]);
  return new AgentLoop({ llm, dispatcher: new ToolDispatcher({ registry }), registry, logger: { warn: () => undefined } });
}

/**
 * A model whose first answer is `reads` and whose later ones are "done": through `stream` a chunk
 * at a time, through `streamReads` (when it has one) a read at a time.
 */
function readingModel(first: StreamChunk[][], options: { reads: boolean }): LlmAdapter & { used: string[] } {
  const used: string[] = [];
  const answers = [first];
  const next = (): StreamChunk[][] => answers.shift() ?? [[{ contentDelta: 'done', finishReason: 'stop' }]];
  const model: LlmAdapter & { used: string[] } = {
    used,
    chat: async (): Promise<ChatResponse> => {
      throw new Error('not called');
    },
    stream: async function* () {
      used.push('stream');
      for (const read of next()) yield* read;
    },
  };
  if (options.reads) {
    model.streamReads = async function* () {
      used.push('streamReads');
      yield* next();
    };
  }
  return model;
}

/** Every callback of a run, in order, with its arguments. */
function recorder(): { calls: unknown[][]; listener: AgentEventListener } {
  const calls: unknown[][] = [];
  const record =
    (name: string) =>
    (...args: unknown[]): void =>
      void calls.push([name, ...args]);
  return {
    calls,
    listener: {
      onContentDelta: record('onContentDelta'),
      onThinkingStart: record('onThinkingStart'),
      onThinkingDelta: record('onThinkingDelta'),
      onThinkingEnd: record('onThinkingEnd'),
      onToolCallStart: record('onToolCallStart'),
      onToolCallArgsDelta: record('onToolCallArgsDelta'),
      // A call's duration differs from run to run: only that it has one is compared.
      onToolCallResult: (id, result, meta) => void calls.push(['onToolCallResult', id, result, { ...meta, durationMs: typeof meta?.durationMs }]),
      onMessageEnd: record('onMessageEnd'),
      onError: record('onError'),
    },
  };
}

const READS: StreamChunk[][] = [
  [{ thinkingDelta: 'Let me ' }, { thinkingDelta: 'look.' }, { contentDelta: 'Listing ' }],
  [{ contentDelta: 'the tasks.' }, { toolCallDeltas: [{ index: 0, id: 'c1', function: { name: 'nothing_here', arguments: '{"a"' } }] }],
  [{ toolCallDeltas: [{ index: 0, function: { arguments: ':1}' } }] }, { finishReason: 'tool_calls', usage: { promptTokens: 4, completionTokens: 3, totalTokens: 7 } }],
];

describe('AgentLoop reading the model stream', () => {
  it("listens to the run's signal once for the whole stream, not once a chunk, and leaves no listener behind", async () => {
    const answer = Array.from({ length: 150 }, (_, index) => `word${index}`).join(' ');
    // The scripted model streams the answer word by word: some 150 chunks.
    const loop = loopOver(new ScriptedLlmAdapter({ rounds: [{ content: answer }] }));
    const context = contextFor();
    const deltas: string[] = [];
    const listener: AgentEventListener = {
      onContentDelta: (delta) => void deltas.push(delta),
      onToolCallStart: () => undefined,
      onToolCallResult: () => undefined,
      onMessageEnd: () => undefined,
      onError: (message) => {
        throw new Error(message);
      },
    };
    const abortListeners = (spy: jest.SpyInstance) => spy.mock.calls.filter(([type]) => type === 'abort').length;
    const added = jest.spyOn(context.signal, 'addEventListener');
    const removed = jest.spyOn(context.signal, 'removeEventListener');

    await loop.execute(context, listener);

    expect(deltas.length).toBeGreaterThan(100);
    expect(deltas.join('')).toBe(answer);
    expect(abortListeners(added)).toBe(1);
    expect(abortListeners(removed)).toBe(1);
  });

  it('reads a model a read at a time where it can (streamReads): the same callbacks and messages as chunk by chunk', async () => {
    const run = async (reads: boolean) => {
      const model = readingModel(READS, { reads });
      const context = contextFor();
      const { calls, listener } = recorder();
      const outcome = await loopOver(model).execute(context, listener);
      return { used: model.used, calls, messages: context.messages, status: outcome.status };
    };
    const byChunk = await run(false);
    const byRead = await run(true);
    expect(byChunk.used).toEqual(['stream', 'stream']);
    expect(byRead.used).toEqual(['streamReads', 'streamReads']);
    expect(byRead.calls).toEqual(byChunk.calls);
    expect(byRead.messages).toEqual(byChunk.messages);
    expect(byRead.status).toBe('completed');
    expect(byRead.calls.map(([name]) => name)).toEqual(
      expect.arrayContaining(['onThinkingStart', 'onThinkingEnd', 'onContentDelta', 'onToolCallStart', 'onToolCallArgsDelta', 'onToolCallResult', 'onMessageEnd']),
    );
  });

  it('stops in the middle of a read when a listener cancels the run as one of its chunks is handled', async () => {
    const words = Array.from({ length: 10 }, (_, index) => ({ contentDelta: `w${index} ` }));
    const model = readingModel([words.slice(0, 2), words.slice(2)], { reads: true });
    const context = contextFor();
    const deltas: string[] = [];
    const listener: AgentEventListener = {
      onContentDelta: (delta) => {
        deltas.push(delta);
        if (deltas.length === 4) context.cancel();
      },
      onToolCallStart: () => undefined,
      onToolCallResult: () => undefined,
      onMessageEnd: () => undefined,
      onError: () => undefined,
    };

    const outcome = await loopOver(model).execute(context, listener);

    expect(outcome.status).toBe('cancelled');
    expect(deltas).toEqual(['w0 ', 'w1 ', 'w2 ', 'w3 ']);
  });
});
