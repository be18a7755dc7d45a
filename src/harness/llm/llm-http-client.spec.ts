import { getEventListeners } from 'node:events';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from './abort-signal';
import { LlmHttpError, LlmNetworkError, LlmResponseError, LlmTimeoutError } from './llm-errors';
import { LlmHttpClient, parseRetryAfter } from './llm-http-client';
import type { SseEvent } from './sse-parser';
import { caught } from './testing/caught';
import { jsonResponse, ReplayServer, sseEvent } from './testing/replay-server';

const FAST = { baseDelayMs: 1 };
/** Short enough to keep the tests quick, long enough for a loopback answer to beat it on a busy machine. */
const SHORT_TIMEOUT_MS = 250;

/** A server that accepts every request and never answers it; it records when each connection closes. */
async function startSilentServer(): Promise<{ url: string; closed: Array<Promise<void>>; close(): Promise<void> }> {
  const closed: Array<Promise<void>> = [];
  const server = http.createServer((req) => {
    closed.push(new Promise<void>((resolve) => req.socket.once('close', () => resolve())));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    closed,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function drain<T>(stream: AsyncIterable<T>, into: T[] = []): Promise<T[]> {
  for await (const item of stream) into.push(item);
  return into;
}

describe('LlmHttpClient', () => {
  let server: ReplayServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  function request(url: string, signal?: AbortSignal) {
    return { provider: 'test', url: `${url}/x`, headers: { 'x-key': 'k' }, body: { hello: 'world' }, signal };
  }

  it('posts the JSON body with the given headers', async () => {
    server = await ReplayServer.start([jsonResponse(200, { ok: true })]);
    const answer = await new LlmHttpClient(FAST).postJson(request(server.url));
    expect(answer).toEqual({ ok: true });
    const [received] = server.requests;
    expect(received.method).toBe('POST');
    expect(received.path).toBe('/v1/x');
    expect(received.body).toEqual({ hello: 'world' });
    expect(received.headers['x-key']).toBe('k');
    expect(received.headers['content-type']).toBe('application/json');
  });

  describe('when the provider is rate-limited or failing', () => {
    it('retries a 429 after its retry-after and then succeeds', async () => {
      server = await ReplayServer.start([
        jsonResponse(429, { error: { message: 'slow down' } }, { 'retry-after': '0' }),
        jsonResponse(200, { ok: 1 }),
      ]);
      await expect(new LlmHttpClient(FAST).postJson(request(server.url))).resolves.toEqual({ ok: 1 });
      expect(server.requests).toHaveLength(2);
    });

    it('retries a 5xx and then succeeds', async () => {
      server = await ReplayServer.start([jsonResponse(502, { message: 'bad gateway' }), jsonResponse(200, { ok: 2 })]);
      await expect(new LlmHttpClient(FAST).postJson(request(server.url))).resolves.toEqual({ ok: 2 });
      expect(server.requests).toHaveLength(2);
    });

    it('gives up after maxAttempts with the last status and message', async () => {
      server = await ReplayServer.start([
        jsonResponse(503, { error: { message: 'overloaded 1' } }),
        jsonResponse(503, { error: { message: 'overloaded 2' } }),
        jsonResponse(200, { ok: 3 }),
      ]);
      const error = await caught(new LlmHttpClient({ ...FAST, maxAttempts: 2 }).postJson(request(server.url)));
      expect(error).toBeInstanceOf(LlmHttpError);
      expect(error.status).toBe(503);
      expect(error.message).toBe('test: 503 Service Unavailable — overloaded 2');
      expect(server.requests).toHaveLength(2);
    });

    it('caps a long retry-after at maxDelayMs', async () => {
      server = await ReplayServer.start([
        jsonResponse(429, {}, { 'retry-after': '3600' }),
        jsonResponse(200, { ok: 4 }),
      ]);
      await expect(new LlmHttpClient({ ...FAST, maxDelayMs: 5 }).postJson(request(server.url))).resolves.toEqual({
        ok: 4,
      });
    }, 5000);
  });

  describe('when the provider refuses the request', () => {
    it('fails at once on a 4xx, with the provider message', async () => {
      server = await ReplayServer.start([
        jsonResponse(400, { error: { message: 'messages: field required', type: 'invalid_request_error' } }),
        jsonResponse(200, {}),
      ]);
      const error = await caught(new LlmHttpClient(FAST).postJson(request(server.url)));
      expect(error).toBeInstanceOf(LlmHttpError);
      expect(error).toMatchObject({ status: 400, providerMessage: 'messages: field required', provider: 'test' });
      expect(error.message).toBe('test: 400 Bad Request — messages: field required');
      expect(server.requests).toHaveLength(1);
    });
  });

  describe('when the provider cannot be reached', () => {
    it('retries and then fails with an LlmNetworkError naming the URL', async () => {
      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      let calls = 0;
      const client = new LlmHttpClient({
        ...FAST,
        fetchImpl: (input, init) => {
          calls++;
          return fetch(input, init);
        },
      });
      const error = await caught(client.postJson(request(`http://127.0.0.1:${port}`)));
      expect(error).toBeInstanceOf(LlmNetworkError);
      expect(error.message).toContain(`request to http://127.0.0.1:${port}/x failed`);
      expect(error.message).toContain('ECONNREFUSED');
      expect(calls).toBe(3);
    });
  });

  describe('when the signal fires', () => {
    it('stops a backoff sleep at once', async () => {
      server = await ReplayServer.start([jsonResponse(429, {}, { 'retry-after': '20' }), jsonResponse(200, {})]);
      const controller = new AbortController();
      const pending = new LlmHttpClient(FAST).postJson(request(server.url, controller.signal));
      while (server.requests.length === 0) await sleep(1);
      await sleep(5);
      controller.abort();
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      expect(server.requests).toHaveLength(1);
    }, 5000);

    it('does not send anything when already aborted', async () => {
      server = await ReplayServer.start([jsonResponse(200, {})]);
      const controller = new AbortController();
      controller.abort(new Error('stop'));
      await expect(new LlmHttpClient(FAST).postJson(request(server.url, controller.signal))).rejects.toThrow('stop');
      expect(server.requests).toHaveLength(0);
    });
  });

  describe('when the provider sends no headers', () => {
    let silent: Awaited<ReturnType<typeof startSilentServer>> | undefined;
    afterEach(async () => {
      await silent?.close();
      silent = undefined;
    });

    it('retries, then fails with an LlmTimeoutError naming the limit, having closed every request', async () => {
      silent = await startSilentServer();
      const client = new LlmHttpClient({ ...FAST, maxAttempts: 2 });
      const error = await caught(client.postJson({ ...request(silent.url), headersTimeoutMs: SHORT_TIMEOUT_MS }));
      expect(error).toBeInstanceOf(LlmTimeoutError);
      expect(error).toMatchObject({ phase: 'headers', timeoutMs: SHORT_TIMEOUT_MS, provider: 'test' });
      expect(error.message).toBe(
        `test: the model sent no response headers within ${SHORT_TIMEOUT_MS} ms (LLM_HEADERS_TIMEOUT_MS)`,
      );
      expect(silent.closed).toHaveLength(2);
      await Promise.all(silent.closed);
    }, 5000);

    it('fails a stream the same way', async () => {
      silent = await startSilentServer();
      const client = new LlmHttpClient({ ...FAST, maxAttempts: 1 });
      const error = await caught(drain(client.postSse({ ...request(silent.url), headersTimeoutMs: SHORT_TIMEOUT_MS })));
      expect(error).toBeInstanceOf(LlmTimeoutError);
      expect(error.phase).toBe('headers');
      await Promise.all(silent.closed);
    }, 5000);

    it('retries a request whose headers are late and takes the next answer', async () => {
      const signals: AbortSignal[] = [];
      const client = new LlmHttpClient({
        ...FAST,
        fetchImpl: (_input, init) => {
          signals.push(init?.signal as AbortSignal);
          // The first attempt hangs until it is aborted, as a provider that never answers; the
          // second answers at once (so the test does not time a real socket).
          if (signals.length === 1) {
            return new Promise<Response>((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
          }
          return Promise.resolve(new Response(JSON.stringify({ ok: 5 }), { status: 200, headers: { 'content-type': 'application/json' } }));
        },
      });
      await expect(client.postJson({ ...request('http://127.0.0.1:9/v1'), headersTimeoutMs: SHORT_TIMEOUT_MS })).resolves.toEqual({ ok: 5 });
      expect(signals).toHaveLength(2);
      expect(signals[0].aborted).toBe(true);
      expect(signals[0].reason).toBeInstanceOf(LlmTimeoutError);
    }, 5000);
  });

  describe('when the body falls silent', () => {
    const slow = (url: string) => ({ ...request(url), idleTimeoutMs: SHORT_TIMEOUT_MS });

    it('ends a stream that already yielded with an idle LlmTimeoutError, without retrying, and closes the request', async () => {
      server = await ReplayServer.start([{ chunks: [sseEvent({ a: 1 })], finish: 'hang' }, { chunks: [sseEvent({ b: 2 })] }]);
      const seen: SseEvent[] = [];
      const error = await caught(drain(new LlmHttpClient(FAST).postSse(slow(server.url)), seen));
      expect(error).toBeInstanceOf(LlmTimeoutError);
      expect(error).toMatchObject({ phase: 'idle', timeoutMs: SHORT_TIMEOUT_MS });
      expect(error.message).toBe(`test: the model stream was idle for ${SHORT_TIMEOUT_MS} ms (LLM_IDLE_TIMEOUT_MS)`);
      expect(seen).toEqual([{ data: '{"a":1}' }]);
      expect(server.requests).toHaveLength(1);
      await server.requests[0].closed;
    }, 5000);

    it('retries a stream that fell silent before anything was yielded', async () => {
      server = await ReplayServer.start([{ chunks: [], finish: 'hang' }, { chunks: [sseEvent({ b: 2 })] }]);
      const events = await drain(new LlmHttpClient(FAST).postSse(slow(server.url)));
      expect(events).toEqual([{ data: '{"b":2}' }]);
      expect(server.requests).toHaveLength(2);
      await server.requests[0].closed;
    }, 5000);

    it('counts as yielded only what the reader yields, not the events it swallowed', async () => {
      server = await ReplayServer.start([
        { chunks: [sseEvent({ ping: true })], finish: 'hang' },
        { chunks: [sseEvent({ ping: true }), sseEvent({ b: 2 })] },
      ]);
      const withoutPings = async function* (events: AsyncIterable<SseEvent>) {
        for await (const event of events) if (!event.data.includes('ping')) yield event.data;
      };
      const items = await drain(new LlmHttpClient(FAST).postSse(slow(server.url), withoutPings));
      expect(items).toEqual(['{"b":2}']);
      expect(server.requests).toHaveLength(2);
    }, 5000);

    it('counts the attempts of the request and of its stream together', async () => {
      server = await ReplayServer.start([
        jsonResponse(503, { error: { message: 'busy' } }),
        { chunks: [], finish: 'hang' },
        { chunks: [sseEvent({ c: 3 })] },
      ]);
      const error = await caught(drain(new LlmHttpClient({ ...FAST, maxAttempts: 2 }).postSse(slow(server.url))));
      expect(error).toBeInstanceOf(LlmTimeoutError);
      expect(server.requests).toHaveLength(2);
    }, 5000);

    it('fails postJson with the idle timeout when the JSON body stalls', async () => {
      server = await ReplayServer.start([
        { headers: { 'content-type': 'application/json' }, chunks: ['{"ok":'], finish: 'hang' },
        jsonResponse(200, { ok: 6 }),
      ]);
      const error = await caught(new LlmHttpClient(FAST).postJson(slow(server.url)));
      expect(error).toBeInstanceOf(LlmTimeoutError);
      expect(error.phase).toBe('idle');
      await server.requests[0].closed;
    }, 5000);

    it('still reports the status of an error answer whose body stalls', async () => {
      server = await ReplayServer.start([{ status: 400, headers: { 'content-type': 'application/json' }, chunks: ['{"err'], finish: 'hang' }]);
      const error = await caught(new LlmHttpClient(FAST).postJson(slow(server.url)));
      expect(error).toBeInstanceOf(LlmHttpError);
      expect(error.message).toBe('test: 400 Bad Request');
      await server.requests[0].closed;
    }, 5000);
  });

  describe('with a long-lived caller signal', () => {
    it('stops following it once each request is over', async () => {
      server = await ReplayServer.start([
        jsonResponse(200, { ok: 1 }),
        jsonResponse(500, {}),
        { chunks: [sseEvent({ a: 1 })] },
        { chunks: [sseEvent({ a: 1 })], finish: 'hang' },
      ]);
      const controller = new AbortController();
      const client = new LlmHttpClient(FAST);
      await client.postJson(request(server.url, controller.signal));
      await drain(client.postSse(request(server.url, controller.signal)));
      for await (const event of client.postSse(request(server.url, controller.signal))) {
        void event;
        break;
      }
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      await server.requests[3].closed;
    }, 5000);
  });

  describe('postSse', () => {
    it('yields the events of the body', async () => {
      server = await ReplayServer.start([{ chunks: [sseEvent({ a: 1 }), sseEvent('[DONE]', 'end')] }]);
      const events = [];
      for await (const event of new LlmHttpClient(FAST).postSse(request(server.url))) events.push(event);
      expect(events).toEqual([{ data: '{"a":1}' }, { event: 'end', data: '[DONE]' }]);
    });

    it('reports a JSON answer to a streaming request with its message', async () => {
      server = await ReplayServer.start([jsonResponse(200, { error: { message: 'model is loading' } })]);
      const error = await caught(async () => {
        for await (const event of new LlmHttpClient(FAST).postSse(request(server!.url))) void event;
      });
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toBe('test: expected an event stream, got JSON: model is loading');
    });

    it('turns a body cut by the server into an LlmResponseError', async () => {
      server = await ReplayServer.start([{ chunks: [sseEvent({ a: 1 })], finish: 'destroy' }]);
      const seen: string[] = [];
      const error = await caught(async () => {
        for await (const event of new LlmHttpClient(FAST).postSse(request(server!.url))) seen.push(event.data);
      });
      expect(error).toBeInstanceOf(LlmResponseError);
      expect(error.message).toMatch(/^test: stream interrupted/);
      expect(seen).toEqual(['{"a":1}']);
    });

    it('closes the connection when the consumer stops early', async () => {
      server = await ReplayServer.start([{ chunks: [sseEvent({ a: 1 })], finish: 'hang' }]);
      for await (const event of new LlmHttpClient(FAST).postSse(request(server.url))) {
        expect(event.data).toBe('{"a":1}');
        break;
      }
      await server.requests[0].closed;
    }, 5000);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it.each([
    [{ 'retry-after': '2' }, 2000],
    [{ 'retry-after': '0.5' }, 500],
    [{ 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }, 7000],
    [{ 'retry-after': 'Tue, 31 Dec 2024 23:59:00 GMT' }, 0],
    [{ 'retry-after-ms': '250', 'retry-after': '9' }, 250],
    [{ 'retry-after': 'soon' }, null],
    [{ 'retry-after': '-3' }, null],
    [{}, null],
  ])('reads %j as %p ms', (headers, expected) => {
    expect(parseRetryAfter(new Headers(headers as Record<string, string>), now)).toBe(expected);
  });
});
