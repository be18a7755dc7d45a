import type { ChatRequest, LlmModelConfig, ToolDefinition } from './chat-request';
import { LlmAnswerTooLargeError, LlmHttpError, LlmResponseError, LlmTimeoutError } from './llm-http';
import { OpenAiLlmAdapter } from './openai-llm-adapter';
import { caught } from './testing/caught';
import { collectStream } from './testing/collect-stream';
import { cutEvery, jsonResponse, ReplayServer, sseEvent, type ReplayResponse } from './testing/replay-server';

const READ_FILE: ToolDefinition = {
  type: 'function',
  function: {
    name: 'read_file',
    description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
};

function config(server: ReplayServer, overrides: Partial<LlmModelConfig> = {}): LlmModelConfig {
  return { protocol: 'openai', baseUrl: server.url, apiKey: 'sk-test', model: 'gpt-test', ...overrides };
}

function chunk(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-test',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

const USAGE_CHUNK = {
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
};

function stream(...events: unknown[]): ReplayResponse {
  return { chunks: events.map((event) => sseEvent(event)) };
}

const PLAIN_TEXT = stream(
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Hello' }),
  chunk({ content: ', world' }),
  chunk({}, 'stop'),
  USAGE_CHUNK,
  '[DONE]',
);

const HELLO: ChatRequest = { messages: [{ role: 'user', content: 'hi' }], sessionId: 1 };

describe('OpenAiLlmAdapter', () => {
  let server: ReplayServer;
  const adapter = new OpenAiLlmAdapter({ baseDelayMs: 1 });
  afterEach(() => server?.close());

  describe('stream', () => {
    it('streams plain text with finish reason and usage', async () => {
      server = await ReplayServer.start([PLAIN_TEXT]);
      const answer = await collectStream(adapter.stream(HELLO, config(server)));
      expect(answer.content).toBe('Hello, world');
      expect(answer.finishReason).toBe('stop');
      expect(answer.usage).toEqual({ promptTokens: 12, completionTokens: 5, totalTokens: 17 });
      expect(answer.chunks.map((c) => c.contentDelta).filter(Boolean)).toEqual(['Hello', ', world']);
    });

    it('posts the request in Chat Completions shape', async () => {
      server = await ReplayServer.start([PLAIN_TEXT]);
      const request: ChatRequest = {
        sessionId: 3,
        temperature: 0.2,
        maxTokens: 300,
        tools: [READ_FILE],
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'read a.txt and b.txt' },
          {
            role: 'assistant',
            content: null,
            reasoning_content: 'I should read both',
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
              { id: 'call_b', type: 'function', function: { name: 'read_file', arguments: '{"path":' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_a', name: 'read_file', content: 'A' },
          { role: 'tool', tool_call_id: 'call_b', name: 'read_file', content: '{"error":"bad"}', is_error: true },
        ],
      };
      await collectStream(adapter.stream(request, config(server)));
      const [received] = server.requests;
      expect(received.path).toBe('/v1/chat/completions');
      expect(received.headers.authorization).toBe('Bearer sk-test');
      expect(received.body).toEqual({
        model: 'gpt-test',
        stream: true,
        stream_options: { include_usage: true },
        temperature: 0.2,
        max_tokens: 300,
        tools: [READ_FILE],
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'read a.txt and b.txt' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
              { id: 'call_b', type: 'function', function: { name: 'read_file', arguments: '{"path":' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_a', content: 'A' },
          { role: 'tool', tool_call_id: 'call_b', content: '{"error":"bad"}' },
        ],
      });
    });

    it('sends no authorization header without an API key', async () => {
      server = await ReplayServer.start([PLAIN_TEXT]);
      await collectStream(adapter.stream(HELLO, config(server, { apiKey: null })));
      expect(server.requests[0].headers.authorization).toBeUndefined();
      expect(server.requests[0].body).not.toHaveProperty('tools');
    });

    it('assembles parallel tool calls whose arguments arrive in many fragments', async () => {
      server = await ReplayServer.start([
        stream(
          chunk({ role: 'assistant', content: null }),
          chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: 'th": "a' } }] }),
          chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'glob', arguments: '' } }] }),
          chunk({ tool_calls: [{ index: 0, function: { arguments: '.txt"}' } }] }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: '{"pattern"' } }] }),
          chunk({ tool_calls: [{ index: 1, function: { arguments: ':"*.ts"}' } }] }),
          chunk({}, 'tool_calls'),
          USAGE_CHUNK,
          '[DONE]',
        ),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, config(server)));
      expect(answer.toolCalls).toEqual([
        { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path": "a.txt"}' } },
        { id: 'call_2', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*.ts"}' } },
      ]);
      expect(answer.finishReason).toBe('tool_calls');
      expect(answer.content).toBe('');
    });

    it('parses events however the bytes are cut', async () => {
      const wire = PLAIN_TEXT.chunks!.join('').replace(/\n/g, '\r\n');
      server = await ReplayServer.start([{ chunks: cutEvery(wire, 7) }]);
      const answer = await collectStream(adapter.stream(HELLO, config(server)));
      expect(answer.content).toBe('Hello, world');
      expect(answer.usage?.totalTokens).toBe(17);
    });

    it('streams reasoning_content and reasoning as thinking', async () => {
      server = await ReplayServer.start([
        stream(
          chunk({ role: 'assistant', reasoning_content: 'Let me ' }),
          chunk({ reasoning_content: 'think.' }),
          chunk({ reasoning: ' More.' }),
          chunk({ content: 'Answer' }),
          chunk({}, 'stop'),
          '[DONE]',
        ),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, config(server)));
      expect(answer.thinking).toBe('Let me think. More.');
      expect(answer.content).toBe('Answer');
    });

    it('accepts a stream that ends after a finish reason without [DONE]', async () => {
      server = await ReplayServer.start([stream(chunk({ content: 'ok' }), chunk({}, 'stop'))]);
      await expect(collectStream(adapter.stream(HELLO, config(server)))).resolves.toMatchObject({ content: 'ok' });
    });

    it('fails on an error event in the stream', async () => {
      server = await ReplayServer.start([
        stream(chunk({ content: 'par' }), { error: { message: 'The server had an error', type: 'server_error' } }),
      ]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('openai: stream error: server_error — The server had an error');
    });

    it('fails when the stream ends without [DONE] or a finish reason', async () => {
      server = await ReplayServer.start([stream(chunk({ content: 'half an ans' }))]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('openai: stream ended before [DONE]');
    });

    it('fails when the server drops the connection mid-stream', async () => {
      server = await ReplayServer.start([{ ...stream(chunk({ content: 'half' })), finish: 'destroy' }]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toMatch(/^openai: stream interrupted/);
    });

    it('fails on an event that is not JSON', async () => {
      server = await ReplayServer.start([stream('{"choices": [')]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toContain('stream event is not JSON');
    });

    it('retries a 429 that says retry-after: 0, then streams', async () => {
      server = await ReplayServer.start([
        jsonResponse(429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '0' }),
        PLAIN_TEXT,
      ]);
      const answer = await collectStream(adapter.stream(HELLO, config(server)));
      expect(answer.content).toBe('Hello, world');
      expect(server.requests).toHaveLength(2);
      expect(server.requests[1].body).toEqual(server.requests[0].body);
    });

    it('retries a 500, then streams', async () => {
      server = await ReplayServer.start([jsonResponse(500, { error: { message: 'boom' } }), PLAIN_TEXT]);
      await expect(collectStream(adapter.stream(HELLO, config(server)))).resolves.toMatchObject({
        content: 'Hello, world',
      });
      expect(server.requests).toHaveLength(2);
    });

    it('fails a 401 at once with the provider message', async () => {
      server = await ReplayServer.start([
        jsonResponse(401, { error: { message: 'Invalid API key', type: 'invalid_request_error', code: 'invalid_api_key' } }),
        PLAIN_TEXT,
      ]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmHttpError);
      expect(error.message).toBe('openai: 401 Unauthorized — Invalid API key');
      expect(server.requests).toHaveLength(1);
    });

    it('aborts the HTTP request when the signal fires mid-stream', async () => {
      server = await ReplayServer.start([{ ...stream(chunk({ content: 'first' })), finish: 'hang' }]);
      const controller = new AbortController();
      const seen: string[] = [];
      const error = await caught(async () => {
        for await (const piece of adapter.stream(HELLO, config(server), controller.signal)) {
          seen.push(piece.contentDelta ?? '');
          controller.abort();
        }
      });
      expect(error.name).toBe('AbortError');
      expect(seen).toEqual(['first']);
      await server.requests[0].closed;
    }, 5000);
  });

  describe('when the answer grows past maxAnswerChars', () => {
    const capped = (max: number) => config(server, { maxAnswerChars: max });

    it('yields what fits, then throws LlmAnswerTooLargeError and aborts the request', async () => {
      server = await ReplayServer.start([
        { ...stream(chunk({ role: 'assistant', content: '' }), ...Array.from({ length: 5 }, () => chunk({ content: 'abcd' }))), finish: 'hang' },
      ]);
      const seen: string[] = [];
      const error = await caught(async () => {
        for await (const piece of adapter.stream(HELLO, capped(10))) seen.push(piece.contentDelta ?? '');
      });
      expect(error).toBeInstanceOf(LlmAnswerTooLargeError);
      expect(error).toMatchObject({ provider: 'openai', maxAnswerChars: 10 });
      expect(error.message).toBe('openai: the answer exceeded LLM_MAX_ANSWER_CHARS = 10 characters');
      expect(seen).toEqual(['abcd', 'abcd']);
      expect(server.requests).toHaveLength(1);
      await server.requests[0].closed;
    }, 5000);

    it('counts reasoning, tool names and argument fragments with the text', async () => {
      server = await ReplayServer.start([
        {
          ...stream(
            chunk({ reasoning_content: 'hmm.' }),
            chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'glob', arguments: '{"' } }] }),
            chunk({ tool_calls: [{ index: 0, function: { arguments: 'p' } }] }),
          ),
          finish: 'hang',
        },
      ]);
      const seen: unknown[] = [];
      const error = await caught(async () => {
        for await (const piece of adapter.stream(HELLO, capped(10))) seen.push(piece);
      });
      expect(error).toBeInstanceOf(LlmAnswerTooLargeError);
      expect(seen).toHaveLength(2);
    }, 5000);

    it('lets an answer of exactly maxAnswerChars through', async () => {
      server = await ReplayServer.start([PLAIN_TEXT]);
      const answer = await collectStream(adapter.stream(HELLO, capped('Hello, world'.length)));
      expect(answer.content).toBe('Hello, world');
      expect(answer.finishReason).toBe('stop');
    });
  });

  describe('the timeouts of the model config', () => {
    it('ends a stream that falls silent after idleTimeoutMs', async () => {
      server = await ReplayServer.start([{ ...stream(chunk({ content: 'first' })), finish: 'hang' }]);
      const seen: string[] = [];
      const error = await caught(async () => {
        for await (const piece of adapter.stream(HELLO, config(server, { idleTimeoutMs: 50 }))) seen.push(piece.contentDelta ?? '');
      });
      expect(error).toBeInstanceOf(LlmTimeoutError);
      expect(error.message).toBe('openai: the model stream was idle for 50 ms (LLM_IDLE_TIMEOUT_MS)');
      expect(seen).toEqual(['first']);
      await server.requests[0].closed;
    }, 5000);

    it('gives up on headers that do not come within headersTimeoutMs, after the retries', async () => {
      server = await ReplayServer.start([]);
      let attempts = 0;
      const hanging = new OpenAiLlmAdapter({
        baseDelayMs: 1,
        maxAttempts: 2,
        fetchImpl: (_input, init) => {
          attempts++;
          return new Promise<Response>((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
        },
      });
      const error = await caught(collectStream(hanging.stream(HELLO, config(server, { headersTimeoutMs: 50 }))));
      expect(error).toBeInstanceOf(LlmTimeoutError);
      expect(error.message).toBe('openai: the model sent no response headers within 50 ms (LLM_HEADERS_TIMEOUT_MS)');
      expect(attempts).toBe(2);
    }, 5000);
  });

  describe('chat', () => {
    it('posts without stream and returns the whole message', async () => {
      server = await ReplayServer.start([
        jsonResponse(200, {
          id: 'chatcmpl-2',
          object: 'chat.completion',
          choices: [
            {
              index: 0,
              finish_reason: 'tool_calls',
              message: {
                role: 'assistant',
                content: null,
                reasoning_content: 'hmm',
                tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*"}' } }],
              },
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
        }),
      ]);
      const answer = await adapter.chat(HELLO, config(server));
      expect(server.requests[0].body).toEqual({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
      expect(answer).toEqual({
        message: {
          role: 'assistant',
          content: null,
          reasoning_content: 'hmm',
          tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*"}' } }],
        },
        finishReason: 'tool_calls',
        usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
      });
    });

    it('rejects a body without choices', async () => {
      server = await ReplayServer.start([jsonResponse(200, { object: 'chat.completion' })]);
      await expect(adapter.chat(HELLO, config(server))).rejects.toThrow('openai: response has no choices[0].message');
    });
  });
});
