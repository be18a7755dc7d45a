import type { StreamChunk } from './chat-request';
import { parseSse, type SseEvent } from './sse-parser';

/** Base class of every failure an LLM provider adapter reports. `provider` names the protocol. */
export class LlmError extends Error {
  override readonly name: string = 'LlmError';
  constructor(
    readonly provider: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${provider}: ${message}`, options);
  }
}

/**
 * The provider answered with an HTTP error status: a 4xx other than 429 at once, a 429 or 5xx
 * once the retries are spent. The message carries the provider's own explanation, e.g.
 * `openai: 401 Unauthorized — Invalid API key`.
 */
export class LlmHttpError extends LlmError {
  override readonly name = 'LlmHttpError';
  constructor(
    provider: string,
    readonly status: number,
    readonly statusText: string,
    /** What the provider said: `error.message`, `message`, or the raw body text; null if empty. */
    readonly providerMessage: string | null,
  ) {
    super(provider, formatHttpMessage(status, statusText, providerMessage));
  }
}

/** The provider could not be reached (connection refused, reset, DNS) after every attempt. */
export class LlmNetworkError extends LlmError {
  override readonly name = 'LlmNetworkError';
}

/**
 * The provider answered something the adapter cannot use: an `error` event in a stream, a stream
 * that broke off or ended before its terminal event, or a body that is not the protocol's shape.
 */
export class LlmResponseError extends LlmError {
  override readonly name = 'LlmResponseError';
}

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

/** One POST to a provider. */
export interface LlmHttpRequest {
  /** Protocol name used in error messages (`openai`, `anthropic`, ...). */
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal?: AbortSignal;
}

/**
 * POSTs JSON to a provider with retries: 429, 5xx and network failures are retried with
 * exponential backoff and jitter (a `retry-after` / `retry-after-ms` header wins, capped);
 * other 4xx fail at once with an {@link LlmHttpError}. The signal aborts the request and any
 * backoff sleep immediately.
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

  /** Sends the request and returns the first successful (2xx) response, body unread. */
  async post(request: LlmHttpRequest): Promise<Response> {
    const { provider, url, headers, signal } = request;
    const body = JSON.stringify(request.body);
    for (let attempt = 1; ; attempt++) {
      throwIfAborted(signal);
      let response: Response;
      try {
        response = await this.fetchImpl(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
          signal,
        });
      } catch (error) {
        if (signal?.aborted) throw abortReason(signal);
        if (attempt >= this.maxAttempts) {
          throw new LlmNetworkError(provider, `request to ${url} failed: ${describeNetworkError(error)}`, {
            cause: error,
          });
        }
        await sleep(this.backoffDelay(attempt), signal);
        continue;
      }
      if (response.ok) return response;

      const text = await readText(response, signal);
      const retryable = response.status === 429 || response.status >= 500;
      if (!retryable || attempt >= this.maxAttempts) {
        throw new LlmHttpError(provider, response.status, response.statusText, extractProviderMessage(text));
      }
      await sleep(this.retryDelay(response.headers, attempt), signal);
    }
  }

  /** Sends the request and parses the successful response as JSON. */
  async postJson(request: LlmHttpRequest): Promise<unknown> {
    const response = await this.post(request);
    const text = await readText(response, request.signal);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new LlmResponseError(request.provider, `response is not JSON: ${truncate(text, 200)}`);
    }
  }

  /**
   * Sends the request and yields the server-sent events of the response. Stopping the iteration
   * early cancels the response body; a body that breaks off raises an {@link LlmResponseError}.
   */
  async *postSse(request: LlmHttpRequest): AsyncGenerator<SseEvent> {
    const response = await this.post(request);
    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.includes('application/json')) {
      // Some gateways answer a streaming request with a JSON error and status 200.
      const text = await readText(response, request.signal);
      throw new LlmResponseError(
        request.provider,
        `expected an event stream, got JSON: ${extractProviderMessage(text) ?? '(empty body)'}`,
      );
    }
    yield* readSseEvents(response, request.provider, request.signal);
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

/** Pulls a human message out of a provider's error body: `error.message`, `message`, or the text. */
export function extractProviderMessage(text: string): string | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  try {
    const body: unknown = JSON.parse(trimmed);
    if (isRecord(body)) {
      const error = body.error;
      if (isRecord(error) && typeof error.message === 'string' && error.message) return error.message;
      if (typeof error === 'string' && error) return error;
      if (typeof body.message === 'string' && body.message) return body.message;
      if (typeof body.detail === 'string' && body.detail) return body.detail;
    }
  } catch {
    // not JSON: the raw text is the best explanation there is
  }
  return truncate(trimmed, 500);
}

/** Reads a response body as server-sent events, turning a broken body into an {@link LlmResponseError}. */
export async function* readSseEvents(
  response: Response,
  provider: string,
  signal?: AbortSignal,
): AsyncGenerator<SseEvent> {
  if (!response.body) throw new LlmResponseError(provider, 'response has no body');
  const reader = response.body.getReader();
  const chunks = async function* (): AsyncGenerator<Uint8Array> {
    while (true) {
      let result: Awaited<ReturnType<typeof reader.read>>;
      try {
        result = await reader.read();
      } catch (error) {
        if (signal?.aborted) throw abortReason(signal);
        throw new LlmResponseError(provider, `stream interrupted: ${describeNetworkError(error)}`, { cause: error });
      }
      if (result.done) return;
      throwIfAborted(signal);
      yield result.value;
    }
  };
  try {
    yield* parseSse(chunks());
  } finally {
    // Releases the connection when the consumer stops early or an error ends the stream.
    reader.cancel().catch(() => undefined);
  }
}

/** Parses the `data` of one event as JSON, naming the provider when it is not. */
export function parseEventJson(provider: string, event: SseEvent): unknown {
  try {
    return JSON.parse(event.data) as unknown;
  } catch {
    throw new LlmResponseError(provider, `stream event is not JSON: ${truncate(event.data, 200)}`);
  }
}

/** Joins a base URL and a path without doubling or dropping the slash. */
export function joinUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** A sleep that the signal cuts short, rejecting with the signal's reason. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    timer.unref?.();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Throws the signal's reason if it has fired. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

async function readText(response: Response, signal: AbortSignal | undefined): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    if (signal?.aborted) throw abortReason(signal);
    return '';
  }
}

function describeNetworkError(error: unknown): string {
  // Duck-typed: fetch's errors may come from another realm (jest's VM), so `instanceof` fails.
  if (!isRecord(error) || typeof error.message !== 'string') return String(error);
  // undici reports "fetch failed" / "terminated" and keeps the useful part in `cause`.
  const cause = error.cause;
  if (isRecord(cause) && typeof cause.message === 'string') {
    const code = typeof cause.code === 'string' && !cause.message.includes(cause.code) ? `${cause.code}: ` : '';
    return `${error.message} (${code}${cause.message})`;
  }
  return error.message;
}

function formatHttpMessage(status: number, statusText: string, providerMessage: string | null): string {
  const head = statusText ? `${status} ${statusText}` : `${status}`;
  return providerMessage ? `${head} — ${providerMessage}` : head;
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** True for a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The first non-empty string among the values. */
export function firstString(...values: unknown[]): string | undefined {
  for (const value of values) if (typeof value === 'string' && value !== '') return value;
  return undefined;
}

/** The value if it is a finite number, else the fallback. */
export function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/** A provider error object or string as one line: its `message` if it has one. */
export function describeProviderError(error: unknown): string {
  if (isRecord(error)) {
    const message = typeof error.message === 'string' ? error.message : null;
    const type = typeof error.type === 'string' ? error.type : typeof error.code === 'string' ? error.code : null;
    if (message && type) return `${type} — ${message}`;
    if (message) return message;
  }
  return typeof error === 'string' ? error : JSON.stringify(error);
}

/** True when a chunk carries nothing, so adapters need not yield it. */
export function isEmptyChunk(chunk: StreamChunk): boolean {
  return (
    chunk.contentDelta === undefined &&
    chunk.thinkingDelta === undefined &&
    chunk.toolCallDeltas === undefined &&
    chunk.finishReason === undefined &&
    chunk.usage === undefined
  );
}
