import type { ChatRequest } from './chat-request';
import { LlmAnswerTooLargeError, LlmResponseError } from './llm-errors';
import { OpenAiLlmAdapter } from './openai-llm-adapter';
import { caught } from './testing/caught';
import { collectStream, collectUntilFailure } from './testing/collect-stream';
import { behavesLikeAnHttpAdapter, configFor, HELLO, READ_FILE, type AdapterWire } from './testing/http-adapter-behaviour';
import { jsonResponse, replayServers, sseEvent, type ReplayResponse } from './testing/replay-server';
import { CLEAR_PIXEL_GIF, IMAGE_ROUND, pathsContaining, RED_PIXEL_PNG, toolCall } from './testing/tool-image-round';

function chunk(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'gpt-test',
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  };
}

const ROLE_CHUNK = chunk({ role: 'assistant', content: '' });

const USAGE_CHUNK = {
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  choices: [],
  usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
};

function stream(...events: unknown[]): ReplayResponse {
  return { chunks: events.map((event) => sseEvent(event)) };
}

const PLAIN_TEXT = stream(ROLE_CHUNK, chunk({ content: 'Hello' }), chunk({ content: ', world' }), chunk({}, 'stop'), USAGE_CHUNK, '[DONE]');

const RED_PIXEL_URL = `data:image/png;base64,${RED_PIXEL_PNG.data}`;
const CLEAR_PIXEL_URL = `data:image/gif;base64,${CLEAR_PIXEL_GIF.data}`;

const WIRE: AdapterWire = {
  createAdapter: (options) => new OpenAiLlmAdapter(options),
  config: { protocol: 'openai', apiKey: 'sk-test', model: 'gpt-test' },
  provider: 'openai',
  path: 'chat/completions',
  headers: { authorization: 'Bearer sk-test' },
  apiKeyHeader: 'authorization',
  helloBody: {
    model: 'gpt-test',
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'hi' }],
  },
  imageRoundBody: {
    model: 'gpt-test',
    stream: true,
    stream_options: { include_usage: true },
    messages: [
      { role: 'user', content: 'read the notes and look at the page' },
      { role: 'assistant', content: null, tool_calls: IMAGE_ROUND.messages[1].tool_calls },
      { role: 'tool', tool_call_id: 'call_notes', content: 'the notes' },
      {
        role: 'tool',
        tool_call_id: 'call_shot',
        content:
          'Captured the page.\n[image image/png, 70 bytes, attachment att_1]\n\n(1 image of this result follows after the tool results.)',
      },
      // After both tool messages: they must follow the assistant's tool_calls without a break.
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Images returned by the tool calls above:' },
          { type: 'text', text: 'Tool call call_shot (screenshot):' },
          { type: 'image_url', image_url: { url: RED_PIXEL_URL } },
        ],
      },
    ],
  },
  imageRoundDataPath: 'messages[4].content[2].image_url.url',
  plainText: PLAIN_TEXT,
  plainTextUsage: { promptTokens: 12, completionTokens: 5, totalTokens: 17 },
  openAnswer: (...texts) => stream(ROLE_CHUNK, ...texts.map((content) => chunk({ content }))),
  errorBody: (type, message) => ({ error: { message, type, code: null } }),
  terminalEvent: '[DONE]',
};

describe('OpenAiLlmAdapter', () => {
  behavesLikeAnHttpAdapter(WIRE);

  const start = replayServers();
  const adapter = new OpenAiLlmAdapter({ baseDelayMs: 1 });

  describe('stream', () => {
    it('posts the request in Chat Completions shape', async () => {
      const server = await start([PLAIN_TEXT]);
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
      await collectStream(adapter.stream(request, configFor(WIRE, server)));
      expect(server.requests[0].body).toEqual({
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

    describe('when tool results carry images', () => {
      it('shows the images of every result of a round in one user message after the round, before the conversation goes on', async () => {
        const server = await start([PLAIN_TEXT]);
        const request: ChatRequest = {
          messages: [
            { role: 'user', content: 'compare the pages' },
            { role: 'assistant', content: null, tool_calls: [toolCall('call_a', 'screenshot'), toolCall('call_b', 'screenshot'), toolCall('call_c', 'glob')] },
            { role: 'tool', tool_call_id: 'call_a', name: 'screenshot', content: 'page a', images: [RED_PIXEL_PNG, CLEAR_PIXEL_GIF] },
            { role: 'tool', tool_call_id: 'call_b', content: '', images: [CLEAR_PIXEL_GIF] },
            { role: 'tool', tool_call_id: 'call_c', name: 'glob', content: '[]' },
            { role: 'assistant', content: 'They differ.' },
            { role: 'user', content: 'how?' },
          ],
        };
        await collectStream(adapter.stream(request, configFor(WIRE, server)));
        const { messages } = server.requests[0].body as { messages: unknown[] };
        expect(messages.slice(2)).toEqual([
          { role: 'tool', tool_call_id: 'call_a', content: 'page a\n\n(2 images of this result follow after the tool results.)' },
          { role: 'tool', tool_call_id: 'call_b', content: '(1 image of this result follows after the tool results.)' },
          { role: 'tool', tool_call_id: 'call_c', content: '[]' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Images returned by the tool calls above:' },
              { type: 'text', text: 'Tool call call_a (screenshot):' },
              { type: 'image_url', image_url: { url: RED_PIXEL_URL } },
              { type: 'image_url', image_url: { url: CLEAR_PIXEL_URL } },
              { type: 'text', text: 'Tool call call_b:' },
              { type: 'image_url', image_url: { url: CLEAR_PIXEL_URL } },
            ],
          },
          { role: 'assistant', content: 'They differ.' },
          { role: 'user', content: 'how?' },
        ]);
      });

      it('gives each round its own user message', async () => {
        const server = await start([PLAIN_TEXT]);
        const request: ChatRequest = {
          messages: [
            { role: 'user', content: 'two rounds' },
            { role: 'assistant', content: null, tool_calls: [toolCall('call_1', 'screenshot')] },
            { role: 'tool', tool_call_id: 'call_1', content: 'one', images: [RED_PIXEL_PNG] },
            { role: 'assistant', content: null, tool_calls: [toolCall('call_2', 'screenshot')] },
            { role: 'tool', tool_call_id: 'call_2', content: 'two', images: [CLEAR_PIXEL_GIF] },
          ],
        };
        await collectStream(adapter.stream(request, configFor(WIRE, server)));
        const { messages } = server.requests[0].body as { messages: Array<{ role: string }> };
        expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant', 'tool', 'user']);
        expect(pathsContaining(messages, RED_PIXEL_PNG.data)).toEqual(['[3].content[2].image_url.url']);
        expect(pathsContaining(messages, CLEAR_PIXEL_GIF.data)).toEqual(['[6].content[2].image_url.url']);
      });

      it('sends no image a model cannot read, and says so in the result', async () => {
        const server = await start([PLAIN_TEXT]);
        const svg = { mediaType: 'image/svg+xml', data: 'PHN2Zy8+' };
        const request: ChatRequest = {
          messages: [
            { role: 'user', content: 'draw' },
            { role: 'assistant', content: null, tool_calls: [toolCall('call_1', 'draw')] },
            { role: 'tool', tool_call_id: 'call_1', content: 'drawn', images: [svg, { mediaType: 'image/png', data: '' }] },
          ],
        };
        await collectStream(adapter.stream(request, configFor(WIRE, server)));
        const { messages } = server.requests[0].body as { messages: unknown[] };
        expect(messages.slice(2)).toEqual([
          { role: 'tool', tool_call_id: 'call_1', content: 'drawn\n\n(1 image not shown (image/svg+xml): models read PNG, JPEG, GIF and WebP only.)' },
        ]);
        expect(pathsContaining(messages, svg.data)).toEqual([]);
      });
    });

    it('assembles parallel tool calls whose arguments arrive in many fragments', async () => {
      const server = await start([
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
      const answer = await collectStream(adapter.stream(HELLO, configFor(WIRE, server)));
      expect(answer.toolCalls).toEqual([
        { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path": "a.txt"}' } },
        { id: 'call_2', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*.ts"}' } },
      ]);
      expect(answer.finishReason).toBe('tool_calls');
      expect(answer.content).toBe('');
    });

    it('streams reasoning_content and reasoning as thinking', async () => {
      const server = await start([
        stream(
          chunk({ role: 'assistant', reasoning_content: 'Let me ' }),
          chunk({ reasoning_content: 'think.' }),
          chunk({ reasoning: ' More.' }),
          chunk({ content: 'Answer' }),
          chunk({}, 'stop'),
          '[DONE]',
        ),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, configFor(WIRE, server)));
      expect(answer.thinking).toBe('Let me think. More.');
      expect(answer.content).toBe('Answer');
    });

    it('accepts a stream that ends after a finish reason without [DONE]', async () => {
      const server = await start([stream(chunk({ content: 'ok' }), chunk({}, 'stop'))]);
      await expect(collectStream(adapter.stream(HELLO, configFor(WIRE, server)))).resolves.toMatchObject({ content: 'ok' });
    });

    it('fails on an error event in the stream', async () => {
      const server = await start([stream(chunk({ content: 'par' }), { error: { message: 'The server had an error', type: 'server_error' } })]);
      const error = await caught(collectStream(adapter.stream(HELLO, configFor(WIRE, server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('openai: stream error: server_error — The server had an error');
    });
  });

  describe('when the answer grows past maxAnswerChars', () => {
    it('counts reasoning, tool names and argument fragments with the text', async () => {
      const server = await start([
        {
          ...stream(
            chunk({ reasoning_content: 'hmm.' }),
            chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'glob', arguments: '{"' } }] }),
            chunk({ tool_calls: [{ index: 0, function: { arguments: 'p' } }] }),
          ),
          finish: 'hang',
        },
      ]);
      const { chunks, error } = await collectUntilFailure(adapter.stream(HELLO, configFor(WIRE, server, { maxAnswerChars: 10 })));
      expect(error).toBeInstanceOf(LlmAnswerTooLargeError);
      expect(chunks).toHaveLength(2);
    }, 5000);
  });

  describe('chat', () => {
    it('posts without stream and returns the whole message', async () => {
      const server = await start([
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
      const answer = await adapter.chat(HELLO, configFor(WIRE, server));
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
      const server = await start([jsonResponse(200, { object: 'chat.completion' })]);
      await expect(adapter.chat(HELLO, configFor(WIRE, server))).rejects.toThrow('openai: response has no choices[0].message');
    });
  });
});
