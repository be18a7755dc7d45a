import { sleep, throwIfAborted, whenNotAborted } from './abort-signal';
import { HttpExchange, type HttpExchangeOptions } from './http-exchange';
import { LlmHttpError, LlmNetworkError, LlmResponseError, truncate } from './llm-errors';
import { extractProviderMessage } from './provider-error-message';
import type { SseEvent } from './sse-parser';

/** Retry and transport settings shared by the HTTP adapters. */
export interface LlmHttpOptions {
  /** Defaults to the global `fetch`. */
  fetchImpl?: typeof fetch;
  /** Attempts per request, counting the first; defaults to 3. */
  maxAttempts?: number;
  /** First backoff delay; each retry doubles it. Defaults to 500 ms. */
  baseDelayMs?: number;
  /** Upper bound for one backoff delay and for a provider's `retry-after`. Defaults to 30 s. */
  maxDelayMs?: number;
  /** Clock for `retry-after` given as an HTTP date. */
  now?: () => number;
  /** Source of jitter in [0, 1). */
  random?: () => number;
}

/**
 * One POST to a provider. `provider` (the protocol name used in error messages: `openai`,
 * `anthropic`, ...), the caller's `signal` and the per-attempt limits are those of every attempt.
 */
export interface LlmHttpRequest extends HttpExchangeOptions {
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** Turns the events of a response into what a stream yields (an adapter's chunks). */
export type SseReader<T> = (events: AsyncIterable<SseEvent>) => AsyncIterable<T>;

/** Turns the events of a response, those of each network read together, into what a stream yields. */
export type SseReadsReader<T> = (reads: AsyncIterable<SseEvent[]>) => AsyncIterable<T>;

/**
 * POSTs JSON to a provider with retries: 429, 5xx, network failures and timeouts are retried with
 * exponential backoff and jitter (a `retry-after` / `retry-after-ms` header wins, capped);
 * other 4xx fail at once with an {@link LlmHttpError}. Each attempt must get its headers within
 * `headersTimeoutMs`, and its body may not fall silent for `idleTimeoutMs`; a timeout aborts the
 * attempt's request. The signal aborts the request and any backoff sleep immediately.
 */
export class LlmHttpClient {
  private readonly fetchImpl: typeof fetch;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly now: () => number;
  private readonly random: () => number;

  constructor(options: LlmHttpOptions = {}) {
    this.fetchImpl = options.fetchImpl ?? ((input, init) => fetch(input, init));
    this.maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? 3));
    this.baseDelayMs = Math.max(0, options.baseDelayMs ?? 500);
    this.maxDelayMs = Math.max(0, options.maxDelayMs ?? 30_000);
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  /** Sends the request and parses the successful response as JSON. */
  async postJson(request: LlmHttpRequest): Promise<unknown> {
    const { response, exchange } = await this.send(request, 1);
    let text: string;
    try {
      text = await exchange.text(response);
    } finally {
      exchange.release();
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new LlmResponseError(request.provider, `response is not JSON: ${truncate(text, 200)}`);
    }
  }

  /**
   * Sends the request and yields the server-sent events of the response, or what `read` makes of
   * them. A network failure or timeout before anything was yielded is retried like a failed
   * request (the caller has seen nothing, so nothing is repeated, and the attempts are counted
   * with those of the request); once something was, it ends the stream. A body that breaks off
   * raises an {@link LlmResponseError}. The request is aborted when the stream ends early, fails,
   * or the consumer stops iterating.
   */
  postSse(request: LlmHttpRequest): AsyncGenerator<SseEvent>;
  postSse<T>(request: LlmHttpRequest, read: SseReader<T>): AsyncGenerator<T>;
  postSse<T>(request: LlmHttpRequest, read?: SseReader<T>): AsyncGenerator<T | SseEvent> {
    const reader: SseReader<T | SseEvent> = read ?? ((events) => events);
    return this.streamWithRetries(request, (exchange, response) => reader(exchange.events(response)));
  }

  /**
   * `postSse` with the events of each network read handed to `read` together, for a reader that
   * yields a read at a time (`LlmAdapter.streamReads`). Retries, limits and aborts as `postSse`.
   */
  postSseReads<T>(request: LlmHttpRequest, read: SseReadsReader<T>): AsyncGenerator<T> {
    return this.streamWithRetries(request, (exchange, response) => read(exchange.eventReads(response)));
  }

  private async *streamWithRetries<T>(request: LlmHttpRequest, open: (exchange: HttpExchange, response: Response) => AsyncIterable<T>): AsyncGenerator<T> {
    for (let firstAttempt = 1; ; ) {
      const { response, attempt, exchange } = await this.send(request, firstAttempt);
      let yielded = false;
      try {
        const contentType = response.headers.get('content-type') ?? '';
        if (contentType.includes('application/json')) {
          // Some gateways answer a streaming request with a JSON error and status 200.
          const text = await exchange.text(response).catch(whenNotAborted(request.signal, ''));
          throw new LlmResponseError(
            request.provider,
            `expected an event stream, got JSON: ${extractProviderMessage(text) ?? '(empty body)'}`,
          );
        }
        for await (const item of open(exchange, response)) {
          yielded = true;
          yield item;
        }
        return;
      } catch (error) {
        if (yielded || !(error instanceof LlmNetworkError) || attempt >= this.maxAttempts) throw error;
      } finally {
        exchange.release();
      }
      await sleep(this.backoffDelay(attempt), request.signal);
      firstAttempt = attempt + 1;
    }
  }

  /**
   * Sends the request until an attempt gets a 2xx, counting attempts from `firstAttempt` (a
   * stream retried after its headers goes on with the count). Answers the response, body unread,
   * with the exchange that reads it; the caller must release that exchange.
   */
  private async send(request: LlmHttpRequest, firstAttempt: number): Promise<SentRequest> {
    const { provider, url, headers, signal } = request;
    const body = JSON.stringify(request.body);
    for (let attempt = firstAttempt; ; attempt++) {
      throwIfAborted(signal);
      const exchange = new HttpExchange(request);
      let response: Response;
      try {
        response = await exchange.fetch(this.fetchImpl, url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
      } catch (failure) {
        exchange.release();
        if (!(failure instanceof LlmNetworkError) || attempt >= this.maxAttempts) throw failure;
        await sleep(this.backoffDelay(attempt), signal);
        continue;
      }
      if (response.ok) return { response, attempt, exchange };

      // The status decides; a body that breaks off or stalls only costs the provider's message.
      const text = await exchange.text(response).catch(whenNotAborted(signal, ''));
      exchange.release();
      const retryable = response.status === 429 || response.status >= 500;
      if (!retryable || attempt >= this.maxAttempts) {
        throw new LlmHttpError(provider, response.status, response.statusText, extractProviderMessage(text));
      }
      await sleep(this.retryDelay(response.headers, attempt), signal);
    }
  }

  private retryDelay(headers: Headers, attempt: number): number {
    const fromHeader = parseRetryAfter(headers, this.now());
    return fromHeader === null ? this.backoffDelay(attempt) : Math.min(fromHeader, this.maxDelayMs);
  }

  /** Exponential backoff with "equal jitter": half the delay fixed, half random. */
  private backoffDelay(attempt: number): number {
    const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
    return delay / 2 + this.random() * (delay / 2);
  }
}

/**
 * The delay a response asks for, in ms: `retry-after-ms` (OpenAI), else `retry-after` as seconds
 * or as an HTTP date. Null when absent or unreadable.
 */
export function parseRetryAfter(headers: Headers, now: number): number | null {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const header = headers.get('retry-after');
  if (header === null || header.trim() === '') return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : null;
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** A 2xx response, the attempt that got it, and the exchange that reads its body. */
interface SentRequest {
  response: Response;
  attempt: number;
  exchange: HttpExchange;
}
