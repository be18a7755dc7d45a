import { AnthropicLlmAdapter } from './anthropic-llm-adapter';
import type { ChatRequest } from './chat-request';
import { LlmResponseError } from './llm-errors';
import { caught } from './testing/caught';
import { collectStream } from './testing/collect-stream';
import { behavesLikeAnHttpAdapter, configFor, HELLO, READ_FILE, type AdapterWire } from './testing/http-adapter-behaviour';
import { jsonResponse, replayServers, sseEvent, type ReplayResponse } from './testing/replay-server';
import { CLEAR_PIXEL_GIF, pathsContaining, RED_PIXEL_PNG, toolCall } from './testing/tool-image-round';

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

const WIRE: AdapterWire = {
  createAdapter: (options) => new AnthropicLlmAdapter(options),
  config: { protocol: 'anthropic', apiKey: 'sk-ant-test', model: 'claude-test' },
  provider: 'anthropic',
  path: 'messages',
  headers: { 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01', authorization: undefined },
  apiKeyHeader: 'x-api-key',
  helloBody: { model: 'claude-test', max_tokens: 4096, messages: [{ role: 'user', content: 'hi' }], stream: true },
  imageRoundBody: {
    model: 'claude-test',
    max_tokens: 4096,
    stream: true,
    messages: [
      { role: 'user', content: 'read the notes and look at the page' },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_notes', name: 'read_file', input: { path: 'notes.txt' } },
          { type: 'tool_use', id: 'call_shot', name: 'screenshot', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_notes', content: 'the notes' },
          {
            type: 'tool_result',
            tool_use_id: 'call_shot',
            content: [
              { type: 'text', text: 'Captured the page.\n[image image/png, 70 bytes, attachment att_1]' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: RED_PIXEL_PNG.data } },
            ],
          },
        ],
      },
    ],
  },
  imageRoundDataPath: 'messages[2].content[1].content[1].source.data',
  plainText: PLAIN_TEXT,
  // Cached prompt tokens count as prompt tokens.
  plainTextUsage: { promptTokens: 25, completionTokens: 9, totalTokens: 34 },
  openAnswer: (...texts) => stream(MESSAGE_START, PING, textStart(0), ...texts.map((text) => textDelta(0, text))),
  errorBody: (type, message) => ({ type: 'error', error: { type, message } }),
  terminalEvent: 'message_stop',
};

describe('AnthropicLlmAdapter', () => {
  behavesLikeAnHttpAdapter(WIRE);

  const start = replayServers();
  const adapter = new AnthropicLlmAdapter({ baseDelayMs: 1 });

  describe('stream', () => {
    it('maps the conversation to Messages shape, merging tool results into one user turn', async () => {
      const server = await start([PLAIN_TEXT]);
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
      await collectStream(adapter.stream(request, configFor(WIRE, server)));
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

    describe('when tool results carry images', () => {
      const png = (data: string) => ({ type: 'image', source: { type: 'base64', media_type: 'image/png', data } });
      const gif = (data: string) => ({ type: 'image', source: { type: 'base64', media_type: 'image/gif', data } });

      it('puts image blocks in the tool_result of a result without text, and none beside them', async () => {
        const server = await start([PLAIN_TEXT]);
        const request: ChatRequest = {
          messages: [
            { role: 'user', content: 'look' },
            { role: 'assistant', content: null, tool_calls: [toolCall('toolu_1', 'screenshot')] },
            { role: 'tool', tool_call_id: 'toolu_1', content: '', images: [RED_PIXEL_PNG, { mediaType: 'IMAGE/JPG', data: '/9j/4AAQ' }] },
          ],
        };
        await collectStream(adapter.stream(request, configFor(WIRE, server)));
        const { messages } = server.requests[0].body as { messages: unknown[] };
        expect(messages[2]).toEqual({
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [png(RED_PIXEL_PNG.data), { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: '/9j/4AAQ' } }],
            },
          ],
        });
      });

      it('shows an error result\'s images after the turn\'s tool_result blocks, since an error result takes only text', async () => {
        const server = await start([PLAIN_TEXT]);
        const request: ChatRequest = {
          messages: [
            { role: 'user', content: 'look' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [toolCall('toolu_1', 'screenshot'), toolCall('toolu_2', 'open_page'), toolCall('toolu_3', 'glob')],
            },
            { role: 'tool', tool_call_id: 'toolu_1', name: 'screenshot', content: 'shot', images: [CLEAR_PIXEL_GIF] },
            { role: 'tool', tool_call_id: 'toolu_2', name: 'open_page', content: 'page crashed', is_error: true, images: [RED_PIXEL_PNG] },
            { role: 'tool', tool_call_id: 'toolu_3', name: 'glob', content: '[]' },
            { role: 'user', content: 'and now?' },
          ],
        };
        await collectStream(adapter.stream(request, configFor(WIRE, server)));
        const { messages } = server.requests[0].body as { messages: unknown[] };
        expect(messages.slice(2)).toEqual([
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'shot' }, gif(CLEAR_PIXEL_GIF.data)] },
              {
                type: 'tool_result',
                tool_use_id: 'toolu_2',
                content: 'page crashed\n\n(1 image of this result follows after the tool results.)',
                is_error: true,
              },
              { type: 'tool_result', tool_use_id: 'toolu_3', content: '[]' },
              { type: 'text', text: 'Images returned by the tool calls above:' },
              { type: 'text', text: 'Tool call toolu_2 (open_page):' },
              png(RED_PIXEL_PNG.data),
            ],
          },
          { role: 'user', content: 'and now?' },
        ]);
        expect(pathsContaining(messages, RED_PIXEL_PNG.data)).toEqual(['[2].content[5].source.data']);
        expect(pathsContaining(messages, CLEAR_PIXEL_GIF.data)).toEqual(['[2].content[0].content[1].source.data']);
      });

      it('sends no image a model cannot read, and says so in the result', async () => {
        const server = await start([PLAIN_TEXT]);
        const request: ChatRequest = {
          messages: [
            { role: 'user', content: 'draw' },
            { role: 'assistant', content: null, tool_calls: [toolCall('toolu_1', 'draw')] },
            { role: 'tool', tool_call_id: 'toolu_1', content: 'drawn', images: [{ mediaType: 'image/tiff', data: 'SUkqAA==' }, RED_PIXEL_PNG] },
          ],
        };
        await collectStream(adapter.stream(request, configFor(WIRE, server)));
        const { messages } = server.requests[0].body as { messages: Array<{ content: unknown }> };
        expect(messages[2].content).toEqual([
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: [
              { type: 'text', text: 'drawn\n\n(1 image not shown (image/tiff): models read PNG, JPEG, GIF and WebP only.)' },
              png(RED_PIXEL_PNG.data),
            ],
          },
        ]);
      });
    });

    it('assembles parallel tool calls, indexed by order of their tool_use blocks', async () => {
      const server = await start([
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
      const answer = await collectStream(adapter.stream(HELLO, configFor(WIRE, server)));
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
      const server = await start([
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
      const answer = await collectStream(adapter.stream(HELLO, configFor(WIRE, server)));
      expect(answer.thinking).toBe('Consider the files.');
      expect(answer.content).toBe('Answer');
    });

    it('fails on an error event, with its type and message', async () => {
      const server = await start([
        stream(MESSAGE_START, textStart(0), textDelta(0, 'Hel'), {
          type: 'error',
          error: { type: 'overloaded_error', message: 'Overloaded' },
        }),
      ]);
      const error = await caught(collectStream(adapter.stream(HELLO, configFor(WIRE, server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('anthropic: stream error: overloaded_error — Overloaded');
    });

    it('fails when the stream ends after its stop reason but before message_stop', async () => {
      const server = await start([stream(MESSAGE_START, textStart(0), textDelta(0, 'Hel'), blockStop(0), messageDelta('end_turn', 2))]);
      const error = await caught(collectStream(adapter.stream(HELLO, configFor(WIRE, server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('anthropic: stream ended before message_stop');
    });

    it('retries a 529 overloaded, then streams', async () => {
      const server = await start([
        jsonResponse(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
        PLAIN_TEXT,
      ]);
      await expect(collectStream(adapter.stream(HELLO, configFor(WIRE, server)))).resolves.toMatchObject({ content: 'Hello, world' });
      expect(server.requests).toHaveLength(2);
    });
  });

  describe('chat', () => {
    it('posts without stream and returns the whole message', async () => {
      const server = await start([
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
      const answer = await adapter.chat(HELLO, configFor(WIRE, server, { maxTokens: 50 }));
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
