import type { ChatRequest, LlmModelConfig } from './chat-request';
import {
  parseScenario,
  ScenarioError,
  SCRIPTED_RECEIVED_LIMIT,
  SCRIPTED_RECEIVED_SESSIONS,
  ScriptedLlmAdapter,
  type ScriptedScenario,
} from './scripted-llm-adapter';
import { caught } from './testing/caught';
import { collectStream } from './testing/collect-stream';
import { IMAGE_ROUND, RED_PIXEL_PNG } from './testing/tool-image-round';

const CONFIG: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };

function request(sessionId: number | null | undefined, content = 'go'): ChatRequest {
  return { sessionId, messages: [{ role: 'user', content }] };
}

/** Counts the turns of the event loop from now on: `now()` so far, `stop()` ends the count. */
function countTurns(): { now(): number; stop(): number } {
  let turns = 0;
  let counting = true;
  const count = (): void => {
    if (!counting) return;
    turns++;
    setImmediate(count);
  };
  setImmediate(count);
  return {
    now: () => turns,
    stop: () => {
      counting = false;
      return turns;
    },
  };
}

const SCENARIO: ScriptedScenario = {
  rounds: [
    {
      thinking: 'I will read both files first.',
      content: 'Reading the files now.',
      toolCalls: [
        { name: 'read_file', arguments: { path: 'a.txt' } },
        { id: 'given-id', name: 'read_file', arguments: { path: 'b.txt' } },
      ],
    },
    { toolCalls: [{ name: 'write_file', arguments: '{"path": "c.txt", "content": ' }] },
    { content: 'All three files are handled.' },
  ],
};

describe('ScriptedLlmAdapter', () => {
  describe('stream', () => {
    it('answers the rounds of a session in order, then "done"', async () => {
      const adapter = new ScriptedLlmAdapter(SCENARIO);
      const first = await collectStream(adapter.stream(request(1), CONFIG));
      expect(first.thinking).toBe('I will read both files first.');
      expect(first.content).toBe('Reading the files now.');
      expect(first.toolCalls).toEqual([
        { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
        { id: 'given-id', type: 'function', function: { name: 'read_file', arguments: '{"path":"b.txt"}' } },
      ]);
      expect(first.finishReason).toBe('tool_calls');

      const second = await collectStream(adapter.stream(request(1), CONFIG));
      expect(second.toolCalls).toEqual([
        { id: 'call_2', type: 'function', function: { name: 'write_file', arguments: '{"path": "c.txt", "content": ' } },
      ]);

      const third = await collectStream(adapter.stream(request(1), CONFIG));
      expect(third).toMatchObject({ content: 'All three files are handled.', toolCalls: [], finishReason: 'stop' });

      for (let i = 0; i < 2; i++) {
        const after = await collectStream(adapter.stream(request(1), CONFIG));
        expect(after).toMatchObject({ content: 'done', toolCalls: [], finishReason: 'stop' });
      }
    });

    it('keeps a separate position per session, and one for requests without a session', async () => {
      const adapter = new ScriptedLlmAdapter(SCENARIO);
      await collectStream(adapter.stream(request(1), CONFIG));
      await collectStream(adapter.stream(request(1), CONFIG));
      expect((await collectStream(adapter.stream(request(2), CONFIG))).content).toBe('Reading the files now.');
      expect((await collectStream(adapter.stream(request(undefined), CONFIG))).content).toBe('Reading the files now.');
      expect((await collectStream(adapter.stream(request(null), CONFIG))).toolCalls[0].function.name).toBe('write_file');
      expect((await collectStream(adapter.stream(request(1), CONFIG))).content).toBe('All three files are handled.');
    });

    it('streams in several chunks the way a provider does', async () => {
      const adapter = new ScriptedLlmAdapter(SCENARIO);
      const { chunks } = await collectStream(adapter.stream(request(1), CONFIG));
      expect(chunks.filter((c) => c.thinkingDelta).length).toBeGreaterThan(1);
      expect(chunks.filter((c) => c.contentDelta).length).toBeGreaterThan(1);
      const argumentFragments = chunks.flatMap((c) => c.toolCallDeltas ?? []).filter((d) => d.function?.arguments);
      expect(argumentFragments.filter((d) => d.index === 0).length).toBeGreaterThan(1);
      expect(argumentFragments.filter((d) => d.index === 1).length).toBeGreaterThan(1);
      // The first fragment of each call carries its id and name, as providers send them.
      const heads = chunks.flatMap((c) => c.toolCallDeltas ?? []).filter((d) => d.id);
      expect(heads).toEqual([
        { index: 0, id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '' } },
        { index: 1, id: 'given-id', type: 'function', function: { name: 'read_file', arguments: '' } },
      ]);
      const last = chunks[chunks.length - 1];
      expect(last.finishReason).toBe('tool_calls');
      expect(last.usage).toEqual({
        promptTokens: expect.any(Number),
        completionTokens: expect.any(Number),
        totalTokens: last.usage!.promptTokens + last.usage!.completionTokens,
      });
      expect(last.usage!.completionTokens).toBeGreaterThan(0);
      expect(chunks.slice(0, -1).every((c) => !c.finishReason && !c.usage)).toBe(true);
    });

    it('estimates more prompt tokens for a longer conversation', async () => {
      const adapter = new ScriptedLlmAdapter({ rounds: [] });
      const short = await collectStream(adapter.stream(request(1, 'hi'), CONFIG));
      const long = await collectStream(adapter.stream(request(2, 'hi '.repeat(400)), CONFIG));
      expect(long.usage!.promptTokens).toBeGreaterThan(short.usage!.promptTokens);
    });

    it('stops when the signal fires mid-stream', async () => {
      const adapter = new ScriptedLlmAdapter({ rounds: [{ content: 'one two three four five six' }] });
      const controller = new AbortController();
      const seen: string[] = [];
      const error = await caught(async () => {
        for await (const chunk of adapter.stream(request(1), CONFIG, controller.signal)) {
          seen.push(chunk.contentDelta ?? '');
          if (seen.length === 2) controller.abort();
        }
      });
      expect(error.name).toBe('AbortError');
      expect(seen).toEqual(['one ', 'two ']);
    });
  });

  describe('chat', () => {
    it('returns the whole round as one message', async () => {
      const adapter = new ScriptedLlmAdapter(SCENARIO);
      const answer = await adapter.chat(request(5), CONFIG);
      expect(answer.message).toEqual({
        role: 'assistant',
        content: 'Reading the files now.',
        reasoning_content: 'I will read both files first.',
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
          { id: 'given-id', type: 'function', function: { name: 'read_file', arguments: '{"path":"b.txt"}' } },
        ],
      });
      expect(answer.finishReason).toBe('tool_calls');
      const second = await adapter.chat(request(5), CONFIG);
      expect(second.message.content).toBeNull();
      expect(second.message.tool_calls?.[0].id).toBe('call_2');
    });

    it('starts a session again after reset', async () => {
      const adapter = new ScriptedLlmAdapter({ rounds: [{ content: 'first' }] });
      await adapter.chat(request(1), CONFIG);
      expect((await adapter.chat(request(1), CONFIG)).message.content).toBe('done');
      adapter.reset(1);
      expect((await adapter.chat(request(1), CONFIG)).message.content).toBe('first');
    });
  });
});

describe('ScriptedLlmAdapter.received', () => {
  it('records each request of a session in order, the tool results\' images included', async () => {
    const adapter = new ScriptedLlmAdapter({ rounds: [] });
    await collectStream(adapter.stream(request(1, 'first'), CONFIG));
    await adapter.chat(IMAGE_ROUND, CONFIG);
    await collectStream(adapter.stream(request(2, 'other session'), CONFIG));

    const received = adapter.received(1);
    expect(received.map((r) => r.messages.length)).toEqual([1, 4]);
    expect(received[1]).toEqual(IMAGE_ROUND);
    expect(received[1].messages[3].images).toEqual([RED_PIXEL_PNG]);
    expect(adapter.received(2).map((r) => r.messages[0].content)).toEqual(['other session']);
    expect(adapter.received(3)).toEqual([]);
  });

  it('keeps requests without a session under null', async () => {
    const adapter = new ScriptedLlmAdapter({ rounds: [] });
    await adapter.chat(request(undefined, 'a'), CONFIG);
    await adapter.chat(request(null, 'b'), CONFIG);
    expect(adapter.received(null).map((r) => r.messages[0].content)).toEqual(['a', 'b']);
  });

  it('keeps each request as it was sent, whatever the caller changes afterwards', async () => {
    const adapter = new ScriptedLlmAdapter({ rounds: [] });
    const sent: ChatRequest = structuredClone(IMAGE_ROUND);
    await adapter.chat(sent, CONFIG);
    sent.messages.push({ role: 'user', content: 'later' });
    sent.messages[3].images!.push({ mediaType: 'image/png', data: 'AAAA' });
    sent.messages[3].images![0].data = 'changed';
    sent.messages[1].tool_calls![0].function.arguments = '{}';
    expect(adapter.received(1)).toEqual([IMAGE_ROUND]);
  });

  it('forgets what a session sent on reset', async () => {
    const adapter = new ScriptedLlmAdapter({ rounds: [] });
    await adapter.chat(request(1), CONFIG);
    await adapter.chat(request(2), CONFIG);
    adapter.reset(1);
    expect(adapter.received(1)).toEqual([]);
    expect(adapter.received(2)).toHaveLength(1);
    adapter.reset();
    expect(adapter.received(2)).toEqual([]);
  });

  it(`keeps the latest ${SCRIPTED_RECEIVED_LIMIT} requests of a session`, async () => {
    const adapter = new ScriptedLlmAdapter({ rounds: [] });
    for (let n = 1; n <= SCRIPTED_RECEIVED_LIMIT + 2; n++) await adapter.chat(request(1, `call ${n}`), CONFIG);
    const received = adapter.received(1);
    expect(received).toHaveLength(SCRIPTED_RECEIVED_LIMIT);
    expect(received[0].messages[0].content).toBe('call 3');
    expect(received.at(-1)?.messages[0].content).toBe(`call ${SCRIPTED_RECEIVED_LIMIT + 2}`);
  });

  it(`keeps the requests of the latest ${SCRIPTED_RECEIVED_SESSIONS} sessions to send one`, async () => {
    const adapter = new ScriptedLlmAdapter({ rounds: [] });
    for (let session = 1; session <= SCRIPTED_RECEIVED_SESSIONS; session++) await adapter.chat(request(session), CONFIG);
    // Session 1 sends again: the least recent is now session 2, which a new session pushes out.
    await adapter.chat(request(1), CONFIG);
    await adapter.chat(request(SCRIPTED_RECEIVED_SESSIONS + 1), CONFIG);
    expect(adapter.received(1)).toHaveLength(2);
    expect(adapter.received(2)).toEqual([]);
    expect(adapter.received(3)).toHaveLength(1);
    expect(adapter.received(SCRIPTED_RECEIVED_SESSIONS + 1)).toHaveLength(1);
  });

  it('delivers a short answer in one read, a long one in several, a turn of the event loop apart', async () => {
    const adapter = new ScriptedLlmAdapter({
      rounds: [{ content: 'a short answer' }, { toolCalls: Array.from({ length: 200 }, (_, i) => ({ name: 'echo', arguments: { text: `call ${i}` } })) }],
    });
    const turnsWhile = async (stream: AsyncIterable<unknown>): Promise<{ chunks: number; turns: number }> => {
      const turns = countTurns();
      let chunks = 0;
      for await (const _ of stream) chunks++;
      return { chunks, turns: turns.stop() };
    };
    const short = await turnsWhile(adapter.stream(request(1), CONFIG));
    expect(short.turns).toBe(1);
    const long = await turnsWhile(adapter.stream(request(1), CONFIG));
    expect(long.chunks).toBeGreaterThan(600);
    expect(long.turns).toBeGreaterThan(5);
    expect(long.turns).toBeLessThan(long.chunks / 20);
  });

  it('gives the chunks of stream a read at a time through streamReads: the same chunks, each read a turn after the one before', async () => {
    const round = { toolCalls: Array.from({ length: 200 }, (_, i) => ({ name: 'echo', arguments: { text: `call ${i}` } })) };
    const chunks = [];
    for await (const chunk of new ScriptedLlmAdapter({ rounds: [round] }).stream(request(1), CONFIG)) chunks.push(chunk);

    const reads: Array<readonly unknown[]> = [];
    const turnsBefore: number[] = [];
    const turns = countTurns();
    for await (const read of new ScriptedLlmAdapter({ rounds: [round] }).streamReads(request(1), CONFIG)) {
      reads.push(read);
      turnsBefore.push(turns.now());
    }
    turns.stop();

    expect(reads.flat()).toEqual(chunks);
    expect(reads.length).toBeGreaterThan(5);
    expect(reads.every((read) => read.length > 0)).toBe(true);
    // Each read comes in a later turn of the event loop than the one before.
    turnsBefore.forEach((turn, index) => {
      if (index > 0) expect(turn).toBeGreaterThan(turnsBefore[index - 1]);
    });
  });

  it('stops between reads when the signal fires', async () => {
    const adapter = new ScriptedLlmAdapter({ rounds: [{ toolCalls: Array.from({ length: 200 }, () => ({ name: 'echo', arguments: { text: 'x' } })) }] });
    const controller = new AbortController();
    let reads = 0;
    const error = await caught(async () => {
      for await (const _ of adapter.streamReads(request(1), CONFIG, controller.signal)) {
        reads++;
        controller.abort();
      }
    });
    expect(error.name).toBe('AbortError');
    expect(reads).toBe(1);
  });
});

describe('parseScenario', () => {
  it('accepts the interface.md example, as a value or as JSON text', () => {
    const text =
      '{"rounds":[{"content":"text"},{"toolCalls":[{"name":"read_file","arguments":{"path":"a.txt"}}]}]}';
    const expected = {
      rounds: [{ content: 'text' }, { toolCalls: [{ name: 'read_file', arguments: { path: 'a.txt' } }] }],
    };
    expect(parseScenario(text)).toEqual(expected);
    expect(parseScenario(JSON.parse(text))).toEqual(expected);
  });

  it.each([
    ['not an object', 'scenario', []],
    ['invalid JSON text', 'scenario', '{"rounds": ['],
    ['rounds missing', 'rounds', {}],
    ['rounds not an array', 'rounds', { rounds: {} }],
    ['an unknown top-level field', 'extra', { rounds: [], extra: 1 }],
    ['a round that is not an object', 'rounds[0]', { rounds: ['hi'] }],
    ['content of the wrong type', 'rounds[0].content', { rounds: [{ content: 42 }] }],
    ['thinking of the wrong type', 'rounds[1].thinking', { rounds: [{}, { thinking: ['x'] }] }],
    ['a misspelt field', 'rounds[0].tool_calls', { rounds: [{ tool_calls: [] }] }],
    ['toolCalls not an array', 'rounds[0].toolCalls', { rounds: [{ toolCalls: {} }] }],
    ['a tool call without a name', 'rounds[0].toolCalls[0].name', { rounds: [{ toolCalls: [{ arguments: {} }] }] }],
    ['an empty id', 'rounds[0].toolCalls[0].id', { rounds: [{ toolCalls: [{ name: 'x', id: '' }] }] }],
    ['an unknown tool-call field', 'rounds[0].toolCalls[0].args', { rounds: [{ toolCalls: [{ name: 'x', args: {} }] }] }],
  ])('rejects %s, naming %s', (_case, field, input) => {
    let error: unknown;
    try {
      parseScenario(input);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ScenarioError);
    expect((error as ScenarioError).field).toBe(field);
    expect((error as ScenarioError).message.startsWith(`${field}: `)).toBe(true);
  });
});

describe('ScriptedLlmAdapter scripts chosen by the first user message', () => {
  const config = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };
  const scenario = parseScenario({
    rounds: [{ content: 'default' }],
    scripts: [
      { match: '[a]', rounds: [{ content: 'script a' }] },
      { match: '[b]', rounds: [{ content: 'script b, round 1' }, { content: 'script b, round 2' }] },
    ],
  });

  async function answer(adapter: ScriptedLlmAdapter, sessionId: number, first: string): Promise<string | null> {
    const response = await adapter.chat({ sessionId, messages: [{ role: 'user', content: first }] }, config);
    return response.message.content;
  }

  it('answers each session from the script its first user message names', async () => {
    const adapter = new ScriptedLlmAdapter(scenario);
    expect(await answer(adapter, 1, 'please [b]')).toBe('script b, round 1');
    expect(await answer(adapter, 2, '[a] go')).toBe('script a');
    expect(await answer(adapter, 3, 'nothing special')).toBe('default');
    expect(await answer(adapter, 1, 'please [b]')).toBe('script b, round 2');
    expect(await answer(adapter, 1, 'please [b]')).toBe('done');
  });

  it('names a malformed script field', () => {
    expect(() => parseScenario({ rounds: [], scripts: [{ match: '', rounds: [] }] })).toThrow('scripts[0].match');
    expect(() => parseScenario({ rounds: [], scripts: [{ match: 'x', rounds: [{ bogus: 1 }] }] })).toThrow('scripts[0].rounds[0].bogus');
    expect(() => parseScenario({ rounds: [], scripts: {} })).toThrow('scripts');
  });
});
