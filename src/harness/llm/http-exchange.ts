import { abortReason, throwIfAborted } from './abort-signal';
import { isRecord } from './json-guards';
import { LlmNetworkError, LlmResponseError, LlmTimeoutError } from './llm-errors';
import { DEFAULT_LLM_LIMITS } from './llm-limits';
import { parseSse, parseSseReads, type SseEvent } from './sse-parser';

/** What one attempt needs to know of its request. */
export interface HttpExchangeOptions {
  /** Protocol name used in error messages. */
  provider: string;
  /** The caller's signal, which may outlive many requests (a run's). */
  signal?: AbortSignal;
  /** Longest wait for the response headers; defaults to {@link DEFAULT_LLM_LIMITS}. */
  headersTimeoutMs?: number;
  /** Longest silence between two reads of the body; defaults to {@link DEFAULT_LLM_LIMITS}. */
  idleTimeoutMs?: number;
}

/**
 * One attempt at a request: its own AbortController, which follows the caller's signal, so that
 * a timeout or an early stop aborts this request (and its socket) without touching the caller's
 * signal. It enforces the attempt's limits: headers within `headersTimeoutMs`, and no silence in
 * the body longer than `idleTimeoutMs`. `release` ends it: it aborts whatever is still open and
 * stops following the caller's signal, which outlives many requests (a run's).
 */
export class HttpExchange {
  private readonly controller = new AbortController();
  private readonly provider: string;
  private readonly callerSignal: AbortSignal | undefined;
  private readonly headersTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly followCaller = (): void => this.controller.abort(abortReason(this.callerSignal as AbortSignal));

  constructor(options: HttpExchangeOptions) {
    this.provider = options.provider;
    this.callerSignal = options.signal;
    this.headersTimeoutMs = options.headersTimeoutMs ?? DEFAULT_LLM_LIMITS.headersTimeoutMs;
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_LLM_LIMITS.idleTimeoutMs;
    this.callerSignal?.addEventListener('abort', this.followCaller, { once: true });
  }

  /**
   * Fetches with this exchange's signal. Rejects with the caller's abort reason when the caller
   * aborted, an {@link LlmTimeoutError} when the headers are late, and an {@link LlmNetworkError}
   * naming the URL for any other failure.
   */
  async fetch(fetchImpl: typeof fetch, url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.withTimeout(fetchImpl(url, { ...init, signal: this.controller.signal }), 'headers', this.headersTimeoutMs);
    } catch (error) {
      throw this.failure(error, (detail) => new LlmNetworkError(this.provider, `request to ${url} failed: ${detail}`, { cause: error }));
    }
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

  /** The body, read as server-sent events, those of each network read together. */
  eventReads(response: Response): AsyncGenerator<SseEvent[]> {
    return parseSseReads(this.body(response));
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
          throw this.failure(error, (detail) => new LlmResponseError(this.provider, `stream interrupted: ${detail}`, { cause: error }));
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
   * What a failed read or fetch becomes: the caller's abort reason when the caller aborted (the
   * failure is only its echo), a timeout as it is, anything else as `wrap` describes it.
   */
  private failure(error: unknown, wrap: (detail: string) => Error): unknown {
    if (this.callerSignal?.aborted) return abortReason(this.callerSignal);
    if (error instanceof LlmTimeoutError) return error;
    return wrap(describeNetworkError(error));
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
