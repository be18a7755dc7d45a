import type { ChatRequest, ChatUsage, LlmModelConfig, StreamChunk, ToolDefinition } from '../chat-request';
import type { HttpLlmAdapter } from '../http-llm-adapter';
import { LlmAnswerTooLargeError, LlmHttpError, LlmResponseError, LlmTimeoutError } from '../llm-errors';
import type { LlmHttpOptions } from '../llm-http-client';
import { caught } from './caught';
import { collectStream, collectUntilFailure } from './collect-stream';
import { cutEvery, jsonResponse, replayServers, type ReplayResponse, type ReplayServer } from './replay-server';
import { IMAGE_ROUND, pathsContaining, RED_PIXEL_PNG } from './tool-image-round';

/** A tool to offer in requests whose mapping a spec checks. */
export const READ_FILE: ToolDefinition = {
  type: 'function',
  function: {
    name: 'read_file',
    description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
};

/** The smallest request: one user message. */
export const HELLO: ChatRequest = { messages: [{ role: 'user', content: 'hi' }], sessionId: 1 };

/** One protocol's side of the behaviours every HTTP adapter shares: its adapter and its wire format. */
export interface AdapterWire {
  /** The adapter under test, with the given transport settings. */
  createAdapter(options: LlmHttpOptions): HttpLlmAdapter;
  /** The model config, but for the base URL (the replay server's). */
  config: Omit<LlmModelConfig, 'baseUrl'>;
  /** The protocol name that starts its error messages. */
  provider: string;
  /** Where requests go, below the replay server's `/v1`. */
  path: string;
  /** Headers a request carries with the config's API key; `undefined` for one it must not carry. */
  headers: Record<string, string | undefined>;
  /** The header that carries the API key, absent without one. */
  apiKeyHeader: string;
  /** The body of a streamed {@link HELLO}. */
  helloBody: Record<string, unknown>;
  /** The body of a streamed {@link IMAGE_ROUND}: its image in the provider's own image field. */
  imageRoundBody: Record<string, unknown>;
  /** Where in {@link imageRoundBody} the image's base64 is, as a JSON path; nowhere else. */
  imageRoundDataPath: string;
  /** A whole streamed answer: `Hello` and `, world`, finish reason `stop`, and {@link plainTextUsage}. */
  plainText: ReplayResponse;
  plainTextUsage: ChatUsage;
  /** An answer that is not over: the events that start one, then a text delta per piece. */
  openAnswer(...texts: string[]): ReplayResponse;
  /** The provider's JSON body for an HTTP error. */
  errorBody(type: string, message: string): unknown;
  /** The event a whole answer ends with, as errors name it. */
  terminalEvent: string;
}

/** The model config of `wire` for a replay server. */
export function configFor(wire: AdapterWire, server: ReplayServer, overrides: Partial<LlmModelConfig> = {}): LlmModelConfig {
  return { ...wire.config, baseUrl: server.url, ...overrides };
}

/**
 * The behaviours the shared HTTP adapter gives every protocol — retries, timeouts, the answer
 * cap, cancellation, streams that break off — checked through one protocol's wire format. Call
 * it in the adapter's `describe`; the adapter's own spec then tests only its mapping.
 */
export function behavesLikeAnHttpAdapter(wire: AdapterWire): void {
  describe('like every HTTP adapter', () => {
    const start = replayServers();
    const adapter = wire.createAdapter({ baseDelayMs: 1 });
    const config = (server: ReplayServer, overrides: Partial<LlmModelConfig> = {}) => configFor(wire, server, overrides);
    const { provider } = wire;

    describe('stream', () => {
      it('streams plain text with finish reason and usage', async () => {
        const server = await start([wire.plainText]);
        const answer = await collectStream(adapter.stream(HELLO, config(server)));
        expect(answer.content).toBe('Hello, world');
        expect(answer.finishReason).toBe('stop');
        expect(answer.usage).toEqual(wire.plainTextUsage);
        expect(answer.chunks.map((c) => c.contentDelta).filter(Boolean)).toEqual(['Hello', ', world']);
      });

      it('posts a streamed request to its path, with the API key in its headers', async () => {
        const server = await start([wire.plainText]);
        await collectStream(adapter.stream(HELLO, config(server)));
        const [received] = server.requests;
        expect(received.path).toBe(`/v1/${wire.path}`);
        for (const [name, value] of Object.entries(wire.headers)) expect(received.headers[name]).toBe(value);
        expect(received.body).toEqual(wire.helloBody);
      });

      it('sends a tool result\'s image in the provider\'s image field, and its base64 nowhere else', async () => {
        const server = await start([wire.plainText]);
        await collectStream(adapter.stream(IMAGE_ROUND, config(server)));
        const [received] = server.requests;
        expect(received.body).toEqual(wire.imageRoundBody);
        expect(pathsContaining(received.body, RED_PIXEL_PNG.data)).toEqual([wire.imageRoundDataPath]);
      });

      it('sends no API key header without an API key', async () => {
        const server = await start([wire.plainText]);
        await collectStream(adapter.stream(HELLO, config(server, { apiKey: null })));
        expect(server.requests[0].headers[wire.apiKeyHeader]).toBeUndefined();
      });

      it.each([
        ['LF', 5],
        ['CRLF', 7],
        ['CRLF', 11],
      ])('parses events however the bytes are cut (%s lines, pieces of %i characters)', async (lines, size) => {
        const text = wire.plainText.chunks!.join('');
        const server = await start([{ chunks: cutEvery(lines === 'CRLF' ? text.replace(/\n/g, '\r\n') : text, size) }]);
        const answer = await collectStream(adapter.stream(HELLO, config(server)));
        expect(answer.content).toBe('Hello, world');
        expect(answer.usage).toEqual(wire.plainTextUsage);
      });

      it('fails on an event that is not JSON', async () => {
        const server = await start([{ chunks: [...wire.openAnswer().chunks!, 'data: {"choices": [\n\n'] }]);
        const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
        expect(error).toBeInstanceOf(LlmResponseError);
        expect(error.message).toBe(`${provider}: stream event is not JSON: {"choices": [`);
      });

      it(`fails when the stream ends before ${wire.terminalEvent}`, async () => {
        const server = await start([wire.openAnswer('half an ans')]);
        const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
        expect(error).toBeInstanceOf(LlmResponseError);
        expect(error.message).toBe(`${provider}: stream ended before ${wire.terminalEvent}`);
      });

      it('fails when the server drops the connection mid-stream', async () => {
        const server = await start([{ ...wire.openAnswer('half'), finish: 'destroy' }]);
        const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
        expect(error).toBeInstanceOf(LlmResponseError);
        expect(error.message).toMatch(new RegExp(`^${provider}: stream interrupted`));
      });

      it('retries a 429 that says retry-after: 0, then streams the same request', async () => {
        const server = await start([
          jsonResponse(429, wire.errorBody('rate_limit_error', 'Rate limit reached'), { 'retry-after': '0' }),
          wire.plainText,
        ]);
        const answer = await collectStream(adapter.stream(HELLO, config(server)));
        expect(answer.content).toBe('Hello, world');
        expect(server.requests).toHaveLength(2);
        expect(server.requests[1].body).toEqual(server.requests[0].body);
      });

      it('retries a 500, then streams', async () => {
        const server = await start([jsonResponse(500, wire.errorBody('api_error', 'boom')), wire.plainText]);
        await expect(collectStream(adapter.stream(HELLO, config(server)))).resolves.toMatchObject({ content: 'Hello, world' });
        expect(server.requests).toHaveLength(2);
      });

      it('fails a 401 at once with the provider message', async () => {
        const server = await start([jsonResponse(401, wire.errorBody('authentication_error', 'Invalid API key')), wire.plainText]);
        const error = await caught(collectStream(adapter.stream(HELLO, config(server))));
        expect(error).toBeInstanceOf(LlmHttpError);
        expect(error.message).toBe(`${provider}: 401 Unauthorized — Invalid API key`);
        expect(server.requests).toHaveLength(1);
      });

      it('aborts the HTTP request when the signal fires mid-stream', async () => {
        const server = await start([{ ...wire.openAnswer('first'), finish: 'hang' }]);
        const controller = new AbortController();
        const { chunks, error } = await collectUntilFailure(adapter.stream(HELLO, config(server), controller.signal), () =>
          controller.abort(),
        );
        expect(error.name).toBe('AbortError');
        expect(chunks.map((c) => c.contentDelta)).toEqual(['first']);
        await server.requests[0].closed;
      }, 5000);
    });

    describe('streamReads', () => {
      /** Every step of `streamReads`, and what it failed with, if it did. */
      const readAll = async (reads: AsyncIterable<readonly StreamChunk[]>): Promise<{ reads: Array<readonly StreamChunk[]>; error?: any }> => {
        const seen: Array<readonly StreamChunk[]> = [];
        try {
          for await (const read of reads) seen.push(read);
          return { reads: seen };
        } catch (error) {
          return { reads: seen, error };
        }
      };

      it('gives the chunks of stream, those of one network read as one step', async () => {
        const whole = { chunks: [wire.plainText.chunks!.join('')] };
        const server = await start([wire.plainText, whole, wire.plainText]);
        const chunks = (await collectStream(adapter.stream(HELLO, config(server)))).chunks;
        const inOneWrite = await readAll(adapter.streamReads(HELLO, config(server)));
        const inManyWrites = await readAll(adapter.streamReads(HELLO, config(server)));
        expect(inOneWrite.error).toBeUndefined();
        expect(inOneWrite.reads.flat()).toEqual(chunks);
        // The server wrote the whole answer at once: a single read, unless the network split it.
        expect(inOneWrite.reads.length).toBeLessThan(chunks.length);
        expect(inManyWrites.reads.flat()).toEqual(chunks);
        expect(inManyWrites.reads.every((read) => read.length > 0)).toBe(true);
      });

      it('hands out the chunks of a read before the one that goes past maxAnswerChars, then throws', async () => {
        const open = wire.openAnswer('abcd', 'abcd', 'abcd', 'abcd');
        const server = await start([{ chunks: [open.chunks!.join('')], finish: 'hang' }]);
        const { reads, error } = await readAll(adapter.streamReads(HELLO, config(server, { maxAnswerChars: 10 })));
        expect(error).toBeInstanceOf(LlmAnswerTooLargeError);
        expect(reads.flat().map((c) => c.contentDelta).filter(Boolean)).toEqual(['abcd', 'abcd']);
        await server.requests[0].closed;
      }, 5000);

      it('hands out the chunks of a read before an event that is not JSON, then fails', async () => {
        const open = wire.openAnswer('abcd', 'efgh');
        const server = await start([{ chunks: [open.chunks!.join('') + 'data: {"choices": [\n\n'] }]);
        const { reads, error } = await readAll(adapter.streamReads(HELLO, config(server)));
        expect(error).toBeInstanceOf(LlmResponseError);
        expect(reads.flat().map((c) => c.contentDelta).filter(Boolean)).toEqual(['abcd', 'efgh']);
      });
    });

    describe('when the answer grows past maxAnswerChars', () => {
      it('yields what fits, then throws LlmAnswerTooLargeError and aborts the request', async () => {
        const server = await start([{ ...wire.openAnswer('abcd', 'abcd', 'abcd', 'abcd', 'abcd'), finish: 'hang' }]);
        const { chunks, error } = await collectUntilFailure(adapter.stream(HELLO, config(server, { maxAnswerChars: 10 })));
        expect(error).toBeInstanceOf(LlmAnswerTooLargeError);
        expect(error).toMatchObject({ provider, maxAnswerChars: 10 });
        expect(error.message).toBe(`${provider}: the answer exceeded LLM_MAX_ANSWER_CHARS = 10 characters`);
        expect(chunks.map((c) => c.contentDelta)).toEqual(['abcd', 'abcd']);
        expect(server.requests).toHaveLength(1);
        await server.requests[0].closed;
      }, 5000);

      it('lets an answer of exactly maxAnswerChars through', async () => {
        const server = await start([wire.plainText]);
        const answer = await collectStream(adapter.stream(HELLO, config(server, { maxAnswerChars: 'Hello, world'.length })));
        expect(answer.content).toBe('Hello, world');
        expect(answer.finishReason).toBe('stop');
      });
    });

    describe('the timeouts of the model config', () => {
      it('ends a stream that falls silent after idleTimeoutMs once text was streamed, without a retry', async () => {
        const server = await start([{ ...wire.openAnswer('first'), finish: 'hang' }, wire.plainText]);
        const { chunks, error } = await collectUntilFailure(adapter.stream(HELLO, config(server, { idleTimeoutMs: 50 })));
        expect(error).toBeInstanceOf(LlmTimeoutError);
        expect(error.message).toBe(`${provider}: the model stream was idle for 50 ms (LLM_IDLE_TIMEOUT_MS)`);
        expect(chunks.map((c) => c.contentDelta)).toEqual(['first']);
        expect(server.requests).toHaveLength(1);
        await server.requests[0].closed;
      }, 5000);

      it('retries a stream that falls silent after events that carried no answer yet', async () => {
        const server = await start([{ ...wire.openAnswer(), finish: 'hang' }, wire.plainText]);
        const answer = await collectStream(adapter.stream(HELLO, config(server, { idleTimeoutMs: 50 })));
        expect(answer.content).toBe('Hello, world');
        expect(server.requests).toHaveLength(2);
        await server.requests[0].closed;
      }, 5000);

      it('gives up on headers that do not come within headersTimeoutMs, after the retries', async () => {
        const server = await start([]);
        let attempts = 0;
        const hanging = wire.createAdapter({
          baseDelayMs: 1,
          maxAttempts: 2,
          fetchImpl: (_input, init) => {
            attempts++;
            return new Promise<Response>((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
          },
        });
        const error = await caught(collectStream(hanging.stream(HELLO, config(server, { headersTimeoutMs: 50 }))));
        expect(error).toBeInstanceOf(LlmTimeoutError);
        expect(error.message).toBe(`${provider}: the model sent no response headers within 50 ms (LLM_HEADERS_TIMEOUT_MS)`);
        expect(attempts).toBe(2);
      }, 5000);
    });
  });
}
