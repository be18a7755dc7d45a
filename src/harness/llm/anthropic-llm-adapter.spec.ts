import { AnthropicLlmAdapter } from './anthropic-llm-adapter';
import type { ChatRequest, LlmModelConfig, ToolDefinition } from './chat-request';
import { LlmHttpError, LlmResponseError, LlmTimeoutError } from './llm-http';
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
  return { protocol: 'anthropic', baseUrl: server.url, apiKey: 'sk-ant-test', model: 'claude-test', ...overrides };
}

/** Events as Anthropic sends them: an `event:` line naming the type, and the type again in data. */
function stream(...events: Array<Record<string, unknown>>): ReplayResponse {
  return { chunks: events.map((event) => sseEvent(event, event.type as string)) };
}

const MESSAGE_START = {
  type: 'message_start',
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    content: [],
    model: 'claude-test',
    stop_reason: null,
    usage: { input_tokens: 20, cache_read_input_tokens: 5, output_tokens: 1 },
  },
};
const PING = { type: 'ping' };
const textStart = (index: number) => ({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
const textDelta = (index: number, text: string) => ({
  type: 'content_block_delta',
  index,
  delta: { type: 'text_delta', text },
});
const blockStop = (index: number) => ({ type: 'content_block_stop', index });
const messageDelta = (stopReason: string, outputTokens: number) => ({
  type: 'message_delta',
  delta: { stop_reason: stopReason, stop_sequence: null },
  usage: { output_tokens: outputTokens },
});
const MESSAGE_STOP = { type: 'message_stop' };

const PLAIN_TEXT = stream(
  MESSAGE_START,
  textStart(0),
  PING,
  textDelta(0, 'Hello'),
  textDelta(0, ', world'),
  blockStop(0),
  messageDelta('end_turn', 9),
  MESSAGE_STOP,
);

const HELLO: ChatRequest = { messages: [{ role: 'user', content: 'hi' }], sessionId: 1 };

describe('AnthropicLlmAdapter', () => {
  let server: ReplayServer;
  const adapter = new AnthropicLlmAdapter({ baseDelayMs: 1 });
  afterEach(() => server?.close());

  describe('stream', () => {
    it('streams plain text with finish reason and usage', async () => {
      server = await ReplayServer.start([PLAIN_TEXT]);
      const answer = await collectStream(adapter.stream(HELLO, config(server)));
      expect(answer.content).toBe('Hello, world');
      expect(answer.finishReason).toBe('stop');
      expect(answer.usage).toEqual({ promptTokens: 25, completionTokens: 9, totalTokens: 34 });
      const [received] = server.requests;
      expect(received.path).toBe('/v1/messages');
      expect(received.headers['x-api-key']).toBe('sk-ant-test');
      expect(received.headers['anthropic-version']).toBe('2023-06-01');
      expect(received.headers.authorization).toBeUndefined();
      expect(received.body).toEqual({
        model: 'claude-test',
        max_tokens: 4096,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
    });

    it('maps the conversation to Messages shape, merging tool results into one user turn', async () => {
      server = await ReplayServer.start([PLAIN_TEXT]);
      const request: ChatRequest = {
        sessionId: 1,
        maxTokens: 1000,
        temperature: 0,
        tools: [READ_FILE],
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'read three files' },
          {
            role: 'assistant',
            content: 'Reading them.',
            reasoning_content: 'unsigned thinking is not sent back',
            tool_calls: [
              { id: 'toolu_a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
              { id: 'toolu_b', type: 'function', function: { name: 'read_file', arguments: '{"path": ' } },
              { id: 'toolu_c', type: 'function', function: { name: 'read_file', arguments: '["not an object"]' } },
            ],
          },
          { role: 'tool', tool_call_id: 'toolu_a', name: 'read_file', content: 'A' },
          { role: 'tool', tool_call_id: 'toolu_b', name: 'read_file', content: '{"error":"bad json"}', is_error: true },
          { role: 'tool', tool_call_id: 'toolu_c', name: 'read_file', content: 'C' },
          { role: 'assistant', content: 'Done reading.' },
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'thanks' },
        ],
      };
      await collectStream(adapter.stream(request, config(server)));
      expect(server.requests[0].body).toEqual({
        model: 'claude-test',
        max_tokens: 1000,
        temperature: 0,
        stream: true,
        system: 'You are terse.\n\nBe brief.',
        tools: [
          {
            name: 'read_file',
            description: 'Read a file',
            input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
          },
        ],
        messages: [
          { role: 'user', content: 'read three files' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Reading them.' },
              { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'a.txt' } },
              { type: 'tool_use', id: 'toolu_b', name: 'read_file', input: {} },
              { type: 'tool_use', id: 'toolu_c', name: 'read_file', input: {} },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_a', content: 'A' },
              { type: 'tool_result', tool_use_id: 'toolu_b', content: '{"error":"bad json"}', is_error: true },
              { type: 'tool_result', tool_use_id: 'toolu_c', content: 'C' },
            ],
          },
          { role: 'assistant', content: [{ type: 'text', text: 'Done reading.' }] },
          { role: 'user', content: 'thanks' },
        ],
      });
    });

    it('assembles parallel tool calls, indexed by order of their tool_use blocks', async () => {
      server = await ReplayServer.start([
        stream(
          MESSAGE_START,
          textStart(0),
          textDelta(0, 'Let me look.'),
          blockStop(0),
          { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {} } },
          { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } },
          { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"pa' } },
          { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'th": "a.t' } },
          { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'xt"}' } },
          blockStop(1),
          { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_2', name: 'task_list', input: {} } },
          { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '' } },
          blockStop(2),
          { type: 'content_block_start', index: 3, content_block: { type: 'tool_use', id: 'toolu_3', name: 'glob', input: {} } },
          { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: '{"pattern":' } },
          { type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: '"*.ts"}' } },
          blockStop(3),
          messageDelta('tool_use', 40),
          MESSAGE_STOP,
        ),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, config(server)));
      expect(answer.content).toBe('Let me look.');
      expect(answer.toolCalls).toEqual([
        { id: 'toolu_1', type: 'function', function: { name: 'read_file', arguments: '{"path": "a.txt"}' } },
        { id: 'toolu_2', type: 'function', function: { name: 'task_list', arguments: '{}' } },
        { id: 'toolu_3', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*.ts"}' } },
      ]);
      const indexes = answer.chunks.flatMap((c) => c.toolCallDeltas ?? []).map((d) => d.index);
      expect([...new Set(indexes)]).toEqual([0, 1, 2]);
      expect(answer.finishReason).toBe('tool_calls');
      expect(answer.usage).toEqual({ promptTokens: 25, completionTokens: 40, totalTokens: 65 });
    });

    it('streams thinking blocks as thinking', async () => {
      server = await ReplayServer.start([
        stream(
          MESSAGE_START,
          { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Consider ' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'the files.' } },
          { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'EqQBCgIYAhIM' } },
          blockStop(0),
          textStart(1),
          textDelta(1, 'Answer'),
          blockStop(1),
          messageDelta('end_turn', 12),
          MESSAGE_STOP,
        ),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, config(server)));
      expect(answer.thinking).toBe('Consider the files.');
      expect(answer.content).toBe('Answer');
    });

    it('parses events however the bytes are cut', async () => {
      server = await ReplayServer.start([{ chunks: cutEvery(PLAIN_TEXT.chunks!.join(''), 5) }]);
      await expect(collectStream(adapter.stream(HELLO, config(server)))).resolves.toMatchObject({
        content: 'Hello, world',
      });
    });

    it('fails on an error event, with its type and message', async () => {
      server = await ReplayServer.start([
        stream(MESSAGE_START, textStart(0), textDelta(0, 'Hel'), {
          type: 'error',
          error: { type: 'overloaded_error', message: 'Overloaded' },
        }),
      ]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('anthropic: stream error: overloaded_error — Overloaded');
    });

    it('fails when the stream ends before message_stop', async () => {
      server = await ReplayServer.start([stream(MESSAGE_START, textStart(0), textDelta(0, 'Hel'), blockStop(0), messageDelta('end_turn', 2))]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('anthropic: stream ended before message_stop');
    });

    it('fails when the server drops the connection mid-stream', async () => {
      server = await ReplayServer.start([{ ...stream(MESSAGE_START, textStart(0), textDelta(0, 'Hel')), finish: 'destroy' }]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toMatch(/^anthropic: stream interrupted/);
    });

    it('retries a 429 that says retry-after: 0, then streams', async () => {
      server = await ReplayServer.start([
        jsonResponse(429, { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limited' } }, { 'retry-after': '0' }),
        PLAIN_TEXT,
      ]);
      await expect(collectStream(adapter.stream(HELLO, config(server)))).resolves.toMatchObject({ content: 'Hello, world' });
      expect(server.requests).toHaveLength(2);
    });

    it('retries a 500 (and 529 overloaded), then streams', async () => {
      server = await ReplayServer.start([
        jsonResponse(500, { type: 'error', error: { type: 'api_error', message: 'Internal' } }),
        jsonResponse(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
        PLAIN_TEXT,
      ]);
      await expect(collectStream(adapter.stream(HELLO, config(server)))).resolves.toMatchObject({ content: 'Hello, world' });
      expect(server.requests).toHaveLength(3);
    });

    it('fails a 401 at once with the provider message', async () => {
      server = await ReplayServer.start([
        jsonResponse(401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }),
        PLAIN_TEXT,
      ]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
      expect(error).toBeInstanceOf(LlmHttpError);
      expect(error.message).toBe('anthropic: 401 Unauthorized — invalid x-api-key');
      expect(server.requests).toHaveLength(1);
    });

    it('retries a stream that falls silent after events that carried no answer yet', async () => {
      server = await ReplayServer.start([{ ...stream(MESSAGE_START, PING), finish: 'hang' }, PLAIN_TEXT]);
      const answer = await collectStream(adapter.stream(HELLO, config(server, { idleTimeoutMs: 50 })));
      expect(answer.content).toBe('Hello, world');
      expect(server.requests).toHaveLength(2);
      await server.requests[0].closed;
    }, 5000);

    it('does not retry a stream that falls silent once text was streamed', async () => {
      server = await ReplayServer.start([{ ...stream(MESSAGE_START, textStart(0), textDelta(0, 'Hel')), finish: 'hang' }, PLAIN_TEXT]);
      const error = await caught(collectStream(adapter.stream(HELLO, config(server, { idleTimeoutMs: 50 }))));
      expect(error).toBeInstanceOf(LlmTimeoutError);
      expect(error.message).toBe('anthropic: the model stream was idle for 50 ms (LLM_IDLE_TIMEOUT_MS)');
      expect(server.requests).toHaveLength(1);
    }, 5000);

    it('aborts the HTTP request when the signal fires mid-stream', async () => {
      server = await ReplayServer.start([{ ...stream(MESSAGE_START, textStart(0), textDelta(0, 'first')), finish: 'hang' }]);
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

  describe('chat', () => {
    it('posts without stream and returns the whole message', async () => {
      server = await ReplayServer.start([
        jsonResponse(200, {
          id: 'msg_2',
          type: 'message',
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_9', name: 'glob', input: { pattern: '*' } },
          ],
          stop_reason: 'tool_use',
          usage: { input_tokens: 3, output_tokens: 4 },
        }),
      ]);
      const answer = await adapter.chat(HELLO, config(server, { maxTokens: 50 }));
      expect(server.requests[0].body).toEqual({
        model: 'claude-test',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(answer).toEqual({
        message: {
          role: 'assistant',
          content: 'Checking.',
          reasoning_content: 'hmm',
          tool_calls: [{ id: 'toolu_9', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*"}' } }],
        },
        finishReason: 'tool_calls',
        usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
      });
    });
  });
});
