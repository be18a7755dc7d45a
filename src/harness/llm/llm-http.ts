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
  override readonly name: string = 'LlmNetworkError';
}

/**
 * The provider kept the caller waiting past a limit: no response headers within
 * `LLM_HEADERS_TIMEOUT_MS` (`headers`), or no byte of the body for `LLM_IDLE_TIMEOUT_MS` (`idle`).
 * A network failure like any other: retried while nothing has reached the caller.
 */
export class LlmTimeoutError extends LlmNetworkError {
  override readonly name = 'LlmTimeoutError';
  constructor(
    provider: string,
    readonly phase: 'headers' | 'idle',
    readonly timeoutMs: number,
  ) {
    super(
      provider,
      phase === 'headers'
        ? `the model sent no response headers within ${timeoutMs} ms (LLM_HEADERS_TIMEOUT_MS)`
        : `the model stream was idle for ${timeoutMs} ms (LLM_IDLE_TIMEOUT_MS)`,
    );
  }
}

/**
 * A streamed answer grew past `LLM_MAX_ANSWER_CHARS`: the adapter stopped reading and aborted the
 * request. The chunks yielded before stay yielded; the one that crossed the limit is not.
 */
export class LlmAnswerTooLargeError extends LlmError {
  override readonly name = 'LlmAnswerTooLargeError';
  constructor(
    provider: string,
    readonly maxAnswerChars: number,
  ) {
    super(provider, `the answer exceeded LLM_MAX_ANSWER_CHARS = ${maxAnswerChars} characters`);
  }
}

/**
 * What the limits of a model config default to. Headers: providers answer a streaming request
 * once they have accepted it, before generating, so a minute is ample even with queueing. Idle:
 * reasoning models may think for a long while without sending a byte (Chat Completions streams
 * nothing while an o-series model reasons), so silence is allowed for longer. Both stay below the
 * 300 s headers and body timeouts of Node's own fetch, so ours fire first, with a clear message.
 * Answer: a million characters is several times the longest output any current model produces.
 */
export const DEFAULT_LLM_LIMITS = {
  headersTimeoutMs: 60_000,
  idleTimeoutMs: 120_000,
  maxAnswerChars: 1_000_000,
} as const;

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
  /** Longest wait for the response headers, per attempt; defaults to {@link DEFAULT_LLM_LIMITS}. */
  headersTimeoutMs?: number;
  /** Longest silence between two reads of the response body; defaults to {@link DEFAULT_LLM_LIMITS}. */
  idleTimeoutMs?: number;
}

/** Turns the events of a response into what a stream yields (an adapter's chunks). */
export type SseReader<T> = (events: AsyncIterable<SseEvent>) => AsyncIterable<T>;

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
    return this.streamWithRetries<T | SseEvent>(request, read ?? ((events) => events));
  }

  private async *streamWithRetries<T>(request: LlmHttpRequest, read: SseReader<T>): AsyncGenerator<T> {
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
        for await (const item of read(exchange.events(response))) {
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
      const exchange = new Exchange(request);
      let response: Response;
      try {
        response = await exchange.fetch(this.fetchImpl, url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body,
        });
      } catch (error) {
        exchange.release();
        if (signal?.aborted) throw abortReason(signal);
        const failure =
          error instanceof LlmTimeoutError
            ? error
            : new LlmNetworkError(provider, `request to ${url} failed: ${describeNetworkError(error)}`, { cause: error });
        if (attempt >= this.maxAttempts) throw failure;
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

/** A 2xx response, the attempt that got it, and the exchange that reads its body. */
interface SentRequest {
  response: Response;
  attempt: number;
  exchange: Exchange;
}

/**
 * One attempt at a request: its own AbortController, which follows the caller's signal, so that
 * a timeout or an early stop aborts this request (and its socket) without touching the caller's
 * signal. It enforces the attempt's limits: headers within `headersTimeoutMs`, and no silence in
 * the body longer than `idleTimeoutMs`. `release` ends it: it aborts whatever is still open and
 * stops following the caller's signal, which outlives many requests (a run's).
 */
class Exchange {
  private readonly controller = new AbortController();
  private readonly provider: string;
  private readonly callerSignal: AbortSignal | undefined;
  private readonly headersTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly followCaller = (): void => this.controller.abort(abortReason(this.callerSignal as AbortSignal));

  constructor(request: LlmHttpRequest) {
    this.provider = request.provider;
    this.callerSignal = request.signal;
    this.headersTimeoutMs = request.headersTimeoutMs ?? DEFAULT_LLM_LIMITS.headersTimeoutMs;
    this.idleTimeoutMs = request.idleTimeoutMs ?? DEFAULT_LLM_LIMITS.idleTimeoutMs;
    this.callerSignal?.addEventListener('abort', this.followCaller, { once: true });
  }

  /** Fetches with this exchange's signal; an {@link LlmTimeoutError} when the headers are late. */
  fetch(fetchImpl: typeof fetch, url: string, init: RequestInit): Promise<Response> {
    return this.withTimeout(fetchImpl(url, { ...init, signal: this.controller.signal }), 'headers', this.headersTimeoutMs);
  }

  /** The body, read as text. */
  async text(response: Response): Promise<string> {
    const decoder = new TextDecoder();
    let text = '';
    for await (const bytes of this.body(response)) text += decoder.decode(bytes, { stream: true });
    return text + decoder.decode();
  }

  /** The body, read as server-sent events. */
  events(response: Response): AsyncGenerator<SseEvent> {
    return parseSse(this.body(response));
  }

  /** Ends the exchange; safe to call more than once. */
  release(): void {
    this.callerSignal?.removeEventListener('abort', this.followCaller);
    this.controller.abort();
  }

  /** The body's bytes, turning a body that breaks off into an {@link LlmResponseError}. */
  private async *body(response: Response): AsyncGenerator<Uint8Array> {
    if (!response.body) throw new LlmResponseError(this.provider, 'response has no body');
    const reader = response.body.getReader();
    try {
      while (true) {
        let result: Awaited<ReturnType<typeof reader.read>>;
        try {
          result = await this.withTimeout(reader.read(), 'idle', this.idleTimeoutMs);
        } catch (error) {
          if (this.callerSignal?.aborted) throw abortReason(this.callerSignal);
          if (error instanceof LlmTimeoutError) throw error;
          throw new LlmResponseError(this.provider, `stream interrupted: ${describeNetworkError(error)}`, { cause: error });
        }
        if (result.done) return;
        throwIfAborted(this.callerSignal);
        yield result.value;
      }
    } finally {
      // Releases the connection when the consumer stops early or an error ends the stream.
      reader.cancel().catch(() => undefined);
    }
  }

  /**
   * Settles as `work` does, unless `timeoutMs` pass first: then the request is aborted (which
   * closes its socket and settles `work`) and the {@link LlmTimeoutError} is thrown.
   */
  private async withTimeout<T>(work: Promise<T>, phase: LlmTimeoutError['phase'], timeoutMs: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new LlmTimeoutError(this.provider, phase, timeoutMs);
        // Rejected before aborting, so the race settles with the timeout and not with the
        // abort error that `work` rejects with in the same turn.
        reject(error);
        this.controller.abort(error);
      }, timeoutMs);
    });
    try {
      return await Promise.race([work, expired]);
    } finally {
      clearTimeout(timer);
    }
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

/** A `catch` handler that answers `fallback` for any failure but the caller's abort. */
function whenNotAborted<T>(signal: AbortSignal | undefined, fallback: T): (error: unknown) => T {
  return () => {
    throwIfAborted(signal);
    return fallback;
  };
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
