import { SpanStatusCode } from '@opentelemetry/api';
import { SpanRecorder } from '../runtime/testing/span-recorder';
import type { ChatRequest, LlmModelConfig, StreamChunk } from './chat-request';
import type { LlmAdapter } from './llm-adapter';
import { TracedLlmAdapter } from './traced-llm-adapter';

const CONFIG: LlmModelConfig = { protocol: 'anthropic', baseUrl: null, apiKey: null, model: 'claude-test', maxTokens: 256 };
const REQUEST: ChatRequest = { messages: [{ role: 'user', content: 'hi' }], sessionId: 7 };

function model(chunks: StreamChunk[], failAfter?: number): LlmAdapter & { streams: AsyncIterable<StreamChunk>[] } {
  const streams: AsyncIterable<StreamChunk>[] = [];
  return {
    streams,
    chat: async () => ({ message: { role: 'assistant', content: 'ok' }, finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 1, totalTokens: 4 } }),
    stream() {
      const stream = (async function* () {
        for (const [index, chunk] of chunks.entries()) {
          if (index === failAfter) throw new TypeError('connection reset');
          yield chunk;
        }
      })();
      streams.push(stream);
      return stream;
    },
  };
}

async function drain(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

const CHUNKS: StreamChunk[] = [{ contentDelta: 'Hel' }, { contentDelta: 'lo' }, { finishReason: 'stop', usage: { promptTokens: 12, completionTokens: 2, totalTokens: 14 } }];

describe('TracedLlmAdapter', () => {
  describe('without a tracing SDK', () => {
    it("hands out the model's own stream, untouched", () => {
      const inner = model(CHUNKS);
      const stream = new TracedLlmAdapter(inner).stream(REQUEST, CONFIG);
      expect(stream).toBe(inner.streams[0]);
    });

    it("hands out the model's own reads, untouched, or its stream when it reads a chunk at a time", () => {
      const reads = (async function* () {
        yield CHUNKS;
      })();
      const reading: LlmAdapter = { ...model(CHUNKS), streamReads: () => reads };
      expect(new TracedLlmAdapter(reading).streamReads(REQUEST, CONFIG)).toBe(reads);
      const inner = model(CHUNKS);
      expect(new TracedLlmAdapter(inner).streamReads(REQUEST, CONFIG)).toBe(inner.streams[0]);
    });
  });

  describe('with a tracing SDK', () => {
    const recorder = new SpanRecorder();
    const spans = () => recorder.named('');
    beforeAll(() => recorder.install());
    beforeEach(() => recorder.reset());
    afterAll(() => recorder.uninstall());

    it('records a streamed call as a chat span with provider, model, finish reason and usage, passing every chunk on', async () => {
      expect(await drain(new TracedLlmAdapter(model(CHUNKS)).stream(REQUEST, CONFIG))).toEqual(CHUNKS);
      expect(spans()).toEqual([
        expect.objectContaining({
          name: 'chat claude-test',
          ended: true,
          status: { code: SpanStatusCode.UNSET },
          attributes: {
            'gen_ai.operation.name': 'chat',
            'gen_ai.provider.name': 'anthropic',
            'gen_ai.request.model': 'claude-test',
            'gen_ai.request.max_tokens': 256,
            'gen_ai.conversation.id': '7',
            'gen_ai.response.finish_reasons': ['stop'],
            'gen_ai.usage.input_tokens': 12,
            'gen_ai.usage.output_tokens': 2,
          },
        }),
      ]);
    });

    it('records the finish reason and usage of chunks that come a read at a time, passing every read on', async () => {
      const reads = [[CHUNKS[0]], [CHUNKS[1], CHUNKS[2]]];
      const reading: LlmAdapter = {
        ...model(CHUNKS),
        streamReads: async function* () {
          yield* reads;
        },
      };
      const received = [];
      for await (const read of new TracedLlmAdapter(reading).streamReads(REQUEST, CONFIG)) received.push(read);
      expect(received).toEqual(reads);
      expect(spans()).toEqual([
        expect.objectContaining({
          name: 'chat claude-test',
          ended: true,
          attributes: expect.objectContaining({ 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 2 }),
        }),
      ]);
    });

    it('marks a stream that fails, and rethrows', async () => {
      await expect(drain(new TracedLlmAdapter(model(CHUNKS, 1)).stream(REQUEST, CONFIG))).rejects.toThrow('connection reset');
      expect(spans()[0]).toEqual(
        expect.objectContaining({ ended: true, status: { code: SpanStatusCode.ERROR, message: 'connection reset' }, attributes: expect.objectContaining({ 'error.type': 'TypeError' }) }),
      );
    });

    it('ends the span of a stream its reader stopped, and closes the model stream', async () => {
      const inner = model(CHUNKS);
      for await (const chunk of new TracedLlmAdapter(inner).stream(REQUEST, CONFIG)) {
        expect(chunk).toEqual(CHUNKS[0]);
        break;
      }
      expect(spans()[0]).toEqual(expect.objectContaining({ ended: true, status: { code: SpanStatusCode.UNSET } }));
      await expect(inner.streams[0][Symbol.asyncIterator]().next()).resolves.toEqual({ done: true, value: undefined });
    });

    it('records a whole (non-streamed) answer too', async () => {
      await new TracedLlmAdapter(model(CHUNKS)).chat(REQUEST, CONFIG);
      expect(spans()[0].attributes).toEqual(expect.objectContaining({ 'gen_ai.response.finish_reasons': ['stop'], 'gen_ai.usage.input_tokens': 3 }));
    });
  });
});
