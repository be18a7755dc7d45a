import type { ChatRequest, ChatResponse, LlmModelConfig, StreamChunk } from './chat-request';
import type { LlmAdapter } from './llm-adapter';
import { createLlmModelConfigFromEnv, LlmAdapterFacade, normalizeProtocol, type LlmAdapters } from './llm-adapter-facade';
import { ScriptedLlmAdapter } from './scripted-llm-adapter';
import { collectStream } from './testing/collect-stream';

/** An adapter that answers with its own name, so routing is visible in the answer. */
class NamedAdapter implements LlmAdapter {
  readonly signals: Array<AbortSignal | undefined> = [];
  constructor(private readonly label: string) {}

  async chat(_request: ChatRequest, _config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse> {
    this.signals.push(signal);
    return { message: { role: 'assistant', content: this.label }, finishReason: 'stop', usage: null };
  }

  async *stream(_request: ChatRequest, _config: LlmModelConfig, signal?: AbortSignal): AsyncGenerator<StreamChunk> {
    this.signals.push(signal);
    yield { contentDelta: this.label, finishReason: 'stop' };
  }
}

function adapters(): LlmAdapters {
  return {
    openai: new NamedAdapter('openai'),
    anthropic: new NamedAdapter('anthropic'),
    responses: new NamedAdapter('responses'),
    scripted: new NamedAdapter('scripted'),
  };
}

function config(protocol: string): LlmModelConfig {
  return { protocol, baseUrl: null, apiKey: null, model: 'm' };
}

const REQUEST: ChatRequest = { messages: [{ role: 'user', content: 'hi' }] };

describe('LlmAdapterFacade', () => {
  it.each([
    ['openai', 'openai'],
    ['anthropic', 'anthropic'],
    ['responses', 'responses'],
    ['scripted', 'scripted'],
    ['Anthropic ', 'anthropic'],
    ['gemini', 'openai'],
    ['', 'openai'],
    ['__proto__', 'openai'],
    ['constructor', 'openai'],
  ])('routes protocol %p to %p', async (protocol, expected) => {
    const facade = new LlmAdapterFacade(adapters());
    expect((await facade.chat(REQUEST, config(protocol))).message.content).toBe(expected);
    expect((await collectStream(facade.stream(REQUEST, config(protocol)))).content).toBe(expected);
  });

  it('passes the abort signal through', async () => {
    const all = adapters();
    const facade = new LlmAdapterFacade(all);
    const controller = new AbortController();
    await facade.chat(REQUEST, config('anthropic'), controller.signal);
    await collectStream(facade.stream(REQUEST, config('anthropic'), controller.signal));
    expect((all.anthropic as NamedAdapter).signals).toEqual([controller.signal, controller.signal]);
  });

  it('drives a real scripted adapter', async () => {
    const facade = new LlmAdapterFacade({ ...adapters(), scripted: new ScriptedLlmAdapter({ rounds: [{ content: 'from the script' }] }) });
    const answer = await collectStream(facade.stream({ ...REQUEST, sessionId: 1 }, config('scripted')));
    expect(answer.content).toBe('from the script');
  });

  it("reads the protocol's adapter a read at a time where it can, else a chunk at a time", async () => {
    const scripted = new ScriptedLlmAdapter({ rounds: [{ content: 'from the script' }] });
    const facade = new LlmAdapterFacade({ ...adapters(), scripted });
    const read = jest.spyOn(scripted, 'streamReads');
    const steps = [];
    for await (const step of facade.streamReads({ ...REQUEST, sessionId: 1 }, config('scripted'))) steps.push(step);
    expect(read).toHaveBeenCalledTimes(1);
    expect(steps.flat().map((chunk) => chunk.contentDelta ?? '').join('')).toBe('from the script');

    const chunks = [];
    for await (const step of facade.streamReads(REQUEST, config('anthropic'))) chunks.push(step);
    expect(chunks).toEqual([{ contentDelta: 'anthropic', finishReason: 'stop' }]);
  });
});

describe('normalizeProtocol', () => {
  it('maps null and undefined to openai', () => {
    expect(normalizeProtocol(null)).toBe('openai');
    expect(normalizeProtocol(undefined)).toBe('openai');
  });
});

describe('createLlmModelConfigFromEnv', () => {
  it('is scripted when LLM_BASE_URL is unset', () => {
    expect(createLlmModelConfigFromEnv({})).toEqual({ protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' });
  });

  it('is openai when LLM_BASE_URL is set', () => {
    expect(
      createLlmModelConfigFromEnv({ LLM_BASE_URL: 'http://127.0.0.1:11434/v1', LLM_API_KEY: 'k', LLM_MODEL: 'llama3' }),
    ).toEqual({ protocol: 'openai', baseUrl: 'http://127.0.0.1:11434/v1', apiKey: 'k', model: 'llama3' });
  });

  it('lets LLM_PROTOCOL override the default', () => {
    const env = { LLM_BASE_URL: 'https://api.anthropic.com/v1', LLM_PROTOCOL: 'anthropic', LLM_MODEL: 'claude' };
    expect(createLlmModelConfigFromEnv(env).protocol).toBe('anthropic');
    expect(createLlmModelConfigFromEnv({ LLM_PROTOCOL: 'responses' }).protocol).toBe('responses');
    expect(createLlmModelConfigFromEnv({ LLM_BASE_URL: 'http://x', LLM_PROTOCOL: 'scripted' }).protocol).toBe('scripted');
  });

  it('treats blank values as unset', () => {
    expect(createLlmModelConfigFromEnv({ LLM_BASE_URL: '  ', LLM_PROTOCOL: '', LLM_API_KEY: '' })).toEqual({
      protocol: 'scripted',
      baseUrl: null,
      apiKey: null,
      model: 'scripted',
    });
  });

  it('gives a default model when a base URL is set without LLM_MODEL', () => {
    expect(createLlmModelConfigFromEnv({ LLM_BASE_URL: 'http://x' }).model).toBe('gpt-4o-mini');
  });

  it.each([
    [{ LLM_PROTOCOL: 'anthropic' }, 'anthropic', 'claude-haiku-4-5'],
    [{ LLM_PROTOCOL: 'anthropic', LLM_BASE_URL: 'http://x' }, 'anthropic', 'claude-haiku-4-5'],
    [{ LLM_PROTOCOL: 'responses' }, 'responses', 'gpt-4o-mini'],
    [{ LLM_PROTOCOL: 'openai' }, 'openai', 'gpt-4o-mini'],
    [{ LLM_PROTOCOL: 'scripted', LLM_BASE_URL: 'http://x' }, 'scripted', 'scripted'],
  ])('picks the default model of the protocol, whatever the base URL: %j', (env, protocol, model) => {
    expect(createLlmModelConfigFromEnv(env)).toEqual(expect.objectContaining({ protocol, model }));
  });

  it('treats an unknown LLM_PROTOCOL as openai, model included', () => {
    const config = createLlmModelConfigFromEnv({ LLM_PROTOCOL: 'Gemini', LLM_BASE_URL: 'http://x' });
    expect(config).toEqual({ protocol: 'openai', baseUrl: 'http://x', apiKey: null, model: 'gpt-4o-mini' });
  });

  it('names a known protocol in lower case', () => {
    expect(createLlmModelConfigFromEnv({ LLM_PROTOCOL: ' Anthropic ' }).protocol).toBe('anthropic');
  });

  it('keeps LLM_MODEL over every default', () => {
    expect(createLlmModelConfigFromEnv({ LLM_PROTOCOL: 'anthropic', LLM_MODEL: 'claude-x' }).model).toBe('claude-x');
  });
});
