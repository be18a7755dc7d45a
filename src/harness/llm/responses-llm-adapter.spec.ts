import type { ChatRequest } from './chat-request';
import { LlmResponseError } from './llm-errors';
import { ResponsesLlmAdapter } from './responses-llm-adapter';
import { caught } from './testing/caught';
import { collectStream } from './testing/collect-stream';
import { behavesLikeAnHttpAdapter, configFor, HELLO, READ_FILE, type AdapterWire } from './testing/http-adapter-behaviour';
import { jsonResponse, replayServers, sseEvent, type ReplayResponse } from './testing/replay-server';
import { CLEAR_PIXEL_GIF, pathsContaining, RED_PIXEL_PNG, toolCall } from './testing/tool-image-round';

/** Events as OpenAI sends them: `event:` line and `type` in data, with sequence numbers. */
function stream(...events: Array<Record<string, unknown>>): ReplayResponse {
  return {
    chunks: events.map((event, i) => sseEvent({ ...event, sequence_number: i }, event.type as string)),
  };
}

const CREATED = { type: 'response.created', response: { id: 'resp_1', status: 'in_progress', output: [] } };
const messageAdded = (outputIndex: number) => ({
  type: 'response.output_item.added',
  output_index: outputIndex,
  item: { id: `msg_${outputIndex}`, type: 'message', role: 'assistant', status: 'in_progress', content: [] },
});
const textDelta = (outputIndex: number, delta: string) => ({
  type: 'response.output_text.delta',
  item_id: `msg_${outputIndex}`,
  output_index: outputIndex,
  content_index: 0,
  delta,
});
const completed = (usage = { input_tokens: 30, output_tokens: 8, total_tokens: 38 }) => ({
  type: 'response.completed',
  response: { id: 'resp_1', status: 'completed', usage },
});

const PLAIN_TEXT = stream(
  CREATED,
  messageAdded(0),
  textDelta(0, 'Hello'),
  textDelta(0, ', world'),
  { type: 'response.output_text.done', item_id: 'msg_0', output_index: 0, content_index: 0, text: 'Hello, world' },
  completed(),
);

const WIRE: AdapterWire = {
  createAdapter: (options) => new ResponsesLlmAdapter(options),
  config: { protocol: 'responses', apiKey: 'sk-test', model: 'gpt-test' },
  provider: 'responses',
  path: 'responses',
  headers: { authorization: 'Bearer sk-test' },
  apiKeyHeader: 'authorization',
  helloBody: { model: 'gpt-test', input: [{ type: 'message', role: 'user', content: 'hi' }], stream: true },
  imageRoundBody: {
    model: 'gpt-test',
    stream: true,
    input: [
      { type: 'message', role: 'user', content: 'read the notes and look at the page' },
      { type: 'function_call', call_id: 'call_notes', name: 'read_file', arguments: '{"path":"notes.txt"}' },
      { type: 'function_call', call_id: 'call_shot', name: 'screenshot', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_notes', output: 'the notes' },
      {
        type: 'function_call_output',
        call_id: 'call_shot',
        output: [
          { type: 'input_text', text: 'Captured the page.\n[image image/png, 70 bytes, attachment att_1]' },
          { type: 'input_image', image_url: `data:image/png;base64,${RED_PIXEL_PNG.data}` },
        ],
      },
    ],
  },
  imageRoundDataPath: 'input[4].output[1].image_url',
  plainText: PLAIN_TEXT,
  plainTextUsage: { promptTokens: 30, completionTokens: 8, totalTokens: 38 },
  openAnswer: (...texts) => stream(CREATED, messageAdded(0), ...texts.map((text) => textDelta(0, text))),
  errorBody: (type, message) => ({ error: { message, type } }),
  terminalEvent: 'response.completed',
};

describe('ResponsesLlmAdapter', () => {
  behavesLikeAnHttpAdapter(WIRE);

  const start = replayServers();
  const adapter = new ResponsesLlmAdapter({ baseDelayMs: 1 });

  describe('stream', () => {
    it('maps the conversation to input items joined by call_id', async () => {
      const server = await start([PLAIN_TEXT]);
      const request: ChatRequest = {
        sessionId: 1,
        maxTokens: 700,
        tools: [READ_FILE],
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'read two files' },
          {
            role: 'assistant',
            content: 'Reading.',
            reasoning_content: 'not sent back',
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
              { id: 'call_b', type: 'function', function: { name: 'read_file', arguments: '{"path":' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_a', name: 'read_file', content: 'A' },
          { role: 'tool', tool_call_id: 'call_b', name: 'read_file', content: '{"error":"bad"}', is_error: true },
          { role: 'assistant', content: null, tool_calls: [] },
          { role: 'user', content: 'thanks' },
        ],
      };
      await collectStream(adapter.stream(request, configFor(WIRE, server, { apiKey: null })));
      const [received] = server.requests;
      expect(received.headers.authorization).toBeUndefined();
      expect(received.body).toEqual({
        model: 'gpt-test',
        instructions: 'You are terse.',
        max_output_tokens: 700,
        stream: true,
        tools: [
          {
            type: 'function',
            name: 'read_file',
            description: 'Read a file',
            parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
          },
        ],
        input: [
          { type: 'message', role: 'user', content: 'read two files' },
          { type: 'message', role: 'assistant', content: 'Reading.' },
          { type: 'function_call', call_id: 'call_a', name: 'read_file', arguments: '{"path":"a.txt"}' },
          { type: 'function_call', call_id: 'call_b', name: 'read_file', arguments: '{"path":' },
          { type: 'function_call_output', call_id: 'call_a', output: 'A' },
          { type: 'function_call_output', call_id: 'call_b', output: '{"error":"bad"}' },
          { type: 'message', role: 'user', content: 'thanks' },
        ],
      });
    });

    describe('when tool results carry images', () => {
      it('sends each result\'s images as input_image items of its output, after its text if it has any', async () => {
        const server = await start([PLAIN_TEXT]);
        const request: ChatRequest = {
          messages: [
            { role: 'user', content: 'look' },
            { role: 'assistant', content: null, tool_calls: [toolCall('call_1', 'screenshot'), toolCall('call_2', 'screenshot')] },
            { role: 'tool', tool_call_id: 'call_1', content: '', images: [RED_PIXEL_PNG, CLEAR_PIXEL_GIF] },
            { role: 'tool', tool_call_id: 'call_2', content: 'failed', is_error: true, images: [CLEAR_PIXEL_GIF] },
          ],
        };
        await collectStream(adapter.stream(request, configFor(WIRE, server)));
        const { input } = server.requests[0].body as { input: unknown[] };
        expect(input.slice(3)).toEqual([
          {
            type: 'function_call_output',
            call_id: 'call_1',
            output: [
              { type: 'input_image', image_url: `data:image/png;base64,${RED_PIXEL_PNG.data}` },
              { type: 'input_image', image_url: `data:image/gif;base64,${CLEAR_PIXEL_GIF.data}` },
            ],
          },
          {
            type: 'function_call_output',
            call_id: 'call_2',
            output: [
              { type: 'input_text', text: 'failed' },
              { type: 'input_image', image_url: `data:image/gif;base64,${CLEAR_PIXEL_GIF.data}` },
            ],
          },
        ]);
        expect(pathsContaining(input, CLEAR_PIXEL_GIF.data)).toEqual(['[3].output[1].image_url', '[4].output[1].image_url']);
      });

      it('keeps the output a string when no image can be read, saying why', async () => {
        const server = await start([PLAIN_TEXT]);
        const request: ChatRequest = {
          messages: [
            { role: 'user', content: 'draw' },
            { role: 'assistant', content: null, tool_calls: [toolCall('call_1', 'draw')] },
            { role: 'tool', tool_call_id: 'call_1', content: 'drawn', images: [{ mediaType: 'image/svg+xml', data: 'PHN2Zy8+' }] },
          ],
        };
        await collectStream(adapter.stream(request, configFor(WIRE, server)));
        const { input } = server.requests[0].body as { input: unknown[] };
        expect(input[2]).toEqual({
          type: 'function_call_output',
          call_id: 'call_1',
          output: 'drawn\n\n(1 image not shown (image/svg+xml): models read PNG, JPEG, GIF and WebP only.)',
        });
      });
    });

    it('assembles parallel function calls, indexed by order of their output items', async () => {
      const call = (outputIndex: number, callId: string, name: string) => ({
        type: 'response.output_item.added',
        output_index: outputIndex,
        item: { id: `fc_${outputIndex}`, type: 'function_call', status: 'in_progress', call_id: callId, name, arguments: '' },
      });
      const args = (outputIndex: number, delta: string) => ({
        type: 'response.function_call_arguments.delta',
        item_id: `fc_${outputIndex}`,
        output_index: outputIndex,
        delta,
      });
      const server = await start([
        stream(
          CREATED,
          { type: 'response.output_item.added', output_index: 0, item: { id: 'rs_0', type: 'reasoning', summary: [] } },
          { type: 'response.output_item.done', output_index: 0, item: { id: 'rs_0', type: 'reasoning', summary: [] } },
          call(1, 'call_x', 'read_file'),
          args(1, '{"pa'),
          args(1, 'th":"a'),
          call(2, 'call_y', 'glob'),
          args(2, '{"pattern":'),
          args(1, '.txt"}'),
          { type: 'response.function_call_arguments.done', item_id: 'fc_1', output_index: 1, arguments: '{"path":"a.txt"}' },
          args(2, '"*.ts"}'),
          { type: 'response.function_call_arguments.done', item_id: 'fc_2', output_index: 2, arguments: '{"pattern":"*.ts"}' },
          {
            type: 'response.output_item.done',
            output_index: 2,
            item: { id: 'fc_2', type: 'function_call', call_id: 'call_y', name: 'glob', arguments: '{"pattern":"*.ts"}' },
          },
          completed({ input_tokens: 50, output_tokens: 20, total_tokens: 70 }),
        ),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, configFor(WIRE, server)));
      expect(answer.toolCalls).toEqual([
        { id: 'call_x', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
        { id: 'call_y', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*.ts"}' } },
      ]);
      expect(answer.finishReason).toBe('tool_calls');
      expect(answer.usage).toEqual({ promptTokens: 50, completionTokens: 20, totalTokens: 70 });
    });

    it('takes the arguments from the done event when no deltas came', async () => {
      const server = await start([
        stream(
          {
            type: 'response.output_item.added',
            output_index: 0,
            item: { id: 'fc_0', type: 'function_call', call_id: 'call_z', name: 'task_list', arguments: '' },
          },
          { type: 'response.function_call_arguments.done', item_id: 'fc_0', output_index: 0, arguments: '{}' },
          completed(),
        ),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, configFor(WIRE, server)));
      expect(answer.toolCalls).toEqual([
        { id: 'call_z', type: 'function', function: { name: 'task_list', arguments: '{}' } },
      ]);
    });

    it('streams reasoning summaries and reasoning text as thinking', async () => {
      const server = await start([
        stream(
          CREATED,
          { type: 'response.reasoning_summary_text.delta', item_id: 'rs_0', output_index: 0, summary_index: 0, delta: 'Plan: ' },
          { type: 'response.reasoning_summary_text.delta', item_id: 'rs_0', output_index: 0, summary_index: 0, delta: 'read.' },
          { type: 'response.reasoning_text.delta', item_id: 'rs_0', output_index: 0, content_index: 0, delta: ' Raw.' },
          messageAdded(1),
          textDelta(1, 'Answer'),
          completed(),
        ),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, configFor(WIRE, server)));
      expect(answer.thinking).toBe('Plan: read. Raw.');
      expect(answer.content).toBe('Answer');
    });

    it('reports a response cut by max_output_tokens as finish reason length', async () => {
      const server = await start([
        stream(messageAdded(0), textDelta(0, 'Partial'), {
          type: 'response.incomplete',
          response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: { input_tokens: 1, output_tokens: 2, total_tokens: 3 } },
        }),
      ]);
      const answer = await collectStream(adapter.stream(HELLO, configFor(WIRE, server)));
      expect(answer).toMatchObject({ content: 'Partial', finishReason: 'length' });
    });

    it('fails on response.failed with the response error', async () => {
      const server = await start([
        stream(CREATED, {
          type: 'response.failed',
          response: { id: 'resp_1', status: 'failed', error: { code: 'server_error', message: 'The model failed' } },
        }),
      ]);
      const error = await caught(collectStream(adapter.stream(HELLO, configFor(WIRE, server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('responses: response failed: server_error — The model failed');
    });

    it('fails on an error event', async () => {
      const server = await start([
        stream(CREATED, { type: 'error', code: 'rate_limit_exceeded', message: 'Slow down', param: null }),
      ]);
      const error = await caught(collectStream(adapter.stream(HELLO, configFor(WIRE, server))));
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('responses: stream error: rate_limit_exceeded — Slow down');
    });
  });

  describe('chat', () => {
    it('posts without stream and returns the whole message', async () => {
      const server = await start([
        jsonResponse(200, {
          id: 'resp_2',
          object: 'response',
          status: 'completed',
          output: [
            { id: 'rs_1', type: 'reasoning', summary: [{ type: 'summary_text', text: 'hmm' }] },
            { id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
            { id: 'fc_1', type: 'function_call', call_id: 'call_9', name: 'glob', arguments: '{"pattern":"*"}' },
          ],
          usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 },
        }),
      ]);
      const answer = await adapter.chat(HELLO, configFor(WIRE, server));
      expect(server.requests[0].body).toEqual({ model: 'gpt-test', input: [{ type: 'message', role: 'user', content: 'hi' }] });
      expect(answer).toEqual({
        message: {
          role: 'assistant',
          content: 'Checking.',
          reasoning_content: 'hmm',
          tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'glob', arguments: '{"pattern":"*"}' } }],
        },
        finishReason: 'tool_calls',
        usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
      });
    });

    it('rejects a failed response', async () => {
      const server = await start([
        jsonResponse(200, { id: 'resp_3', status: 'failed', error: { code: 'server_error', message: 'nope' }, output: [] }),
      ]);
      await expect(adapter.chat(HELLO, configFor(WIRE, server))).rejects.toThrow('responses: response failed: server_error — nope');
    });
  });
});
