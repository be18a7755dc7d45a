import type { ChatRequest, ChatResponse, ChatUsage, LlmModelConfig, StreamChunk } from './chat-request';
import { isRecord, numberOr } from './json-guards';
import type { LlmAdapter } from './llm-adapter';
import { LlmAnswerTooLargeError, LlmResponseError, truncate } from './llm-errors';
import { LlmHttpClient, type LlmHttpOptions, type LlmHttpRequest } from './llm-http-client';
import { DEFAULT_LLM_LIMITS } from './llm-limits';
import type { SseEvent } from './sse-parser';

/**
 * One provider protocol over HTTP: where its requests go, what they carry, and how its answers
 * read. Everything else (sending, retrying, the stream loop, the answer's size) is the adapter's.
 */
export interface HttpProtocol {
  /** Name used in errors (`openai: 401 Unauthorized — ...`). */
  provider: string;
  /** Used when the model config has no `baseUrl`. */
  defaultBaseUrl: string;
  /** Path below the base URL, e.g. `chat/completions`. */
  path: string;
  /** The event a whole streamed answer ends with, as the error for a stream cut short names it. */
  terminalEvent: string;
  /**
   * Data that ends a stream in place of a JSON event (Chat Completions' `[DONE]`): nothing after
   * it is read. Absent when every event of the protocol is JSON.
   */
  doneData?: string;
  /** The headers that authenticate a request and select the API version. */
  headers(config: LlmModelConfig): Record<string, string>;
  /** The JSON body of a request, streamed or not. */
  buildBody(request: ChatRequest, config: LlmModelConfig, stream: boolean): Record<string, unknown>;
  /** The internal answer from the provider's non-streamed JSON body. */
  readResponse(body: unknown): ChatResponse;
  /** A reader for the events of one streamed answer. */
  streamReader(): StreamEventReader;
}

/** One event of a streamed answer, parsed: its `type` (from the data, else the `event:` field) and its data. */
export interface ProviderEvent {
  type: string | undefined;
  data: Record<string, unknown>;
}

/** What one event means for the answer. */
export interface StreamStep {
  /** What the event adds to the answer; absent when it adds nothing. */
  chunk?: StreamChunk;
  /** The event ends the answer (the protocol's terminal event): nothing after it is read. */
  end?: boolean;
}

/**
 * Follows one streamed answer, event by event; a new one for each response, since an event may
 * only make sense after those before it (the index of a tool call, the usage so far).
 */
export interface StreamEventReader {
  /** Reads one event; throws an {@link LlmResponseError} for the provider's error events. */
  read(event: ProviderEvent): StreamStep;
  /**
   * Asked when a stream ends without its terminal event: whether the answer is whole anyway
   * (some Chat Completions servers omit `[DONE]` after the finish reason). Absent means no.
   */
  isComplete?(): boolean;
}

/**
 * What every HTTP provider adapter does, for the {@link HttpProtocol} it is given: one POST per
 * call through `LlmHttpClient` (retries, backoff, timeouts, cancellation, provider error
 * messages), answered as JSON for `chat` and as server-sent events for `stream`. The stream loop
 * is here: it parses each event, hands it to the protocol's {@link StreamEventReader}, drops
 * chunks that carry nothing, holds the answer to the config's `maxAnswerChars`, stops at the
 * terminal event and fails a stream that ends before it.
 */
export class HttpLlmAdapter implements LlmAdapter {
  private readonly http: LlmHttpClient;

  constructor(
    private readonly protocol: HttpProtocol,
    options: LlmHttpOptions = {},
  ) {
    this.http = new LlmHttpClient(options);
  }

  async chat(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse> {
    return this.protocol.readResponse(await this.http.postJson(this.requestFor(request, config, false, signal)));
  }

  async *stream(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncGenerator<StreamChunk> {
    for await (const read of this.streamReads(request, config, signal)) yield* read;
  }

  /** The chunks of `stream`, those that one network read of the event stream brought together. */
  streamReads(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncGenerator<StreamChunk[]> {
    const maxAnswerChars = config.maxAnswerChars ?? DEFAULT_LLM_LIMITS.maxAnswerChars;
    return this.http.postSseReads(this.requestFor(request, config, true, signal), (reads) => this.readStream(reads, maxAnswerChars));
  }

  /**
   * The chunks of one streamed answer, a network read at a time. The chunk that would take the
   * answer past `maxChars` is not yielded but thrown as an {@link LlmAnswerTooLargeError}, which
   * stops the reading (and so aborts the request); like any failure in a read, it comes after the
   * read's chunks before it.
   */
  private async *readStream(reads: AsyncIterable<SseEvent[]>, maxChars: number): AsyncGenerator<StreamChunk[]> {
    const reader = this.protocol.streamReader();
    const answer = { chars: 0, maxChars };
    for await (const events of reads) {
      const read = this.readEvents(events, reader, answer);
      if (read.chunks.length > 0) yield read.chunks;
      if (read.failure) throw read.failure.error;
      if (read.end) return;
    }
    if (!reader.isComplete?.()) throw new LlmResponseError(this.protocol.provider, `stream ended before ${this.protocol.terminalEvent}`);
  }

  /** The chunks of one read's events, up to the end of the answer or the first failure. */
  private readEvents(
    events: readonly SseEvent[],
    reader: StreamEventReader,
    answer: { chars: number; maxChars: number },
  ): { chunks: StreamChunk[]; end: boolean; failure?: { error: unknown } } {
    const { provider, doneData } = this.protocol;
    const chunks: StreamChunk[] = [];
    try {
      for (const event of events) {
        if (doneData !== undefined && event.data.trim() === doneData) return { chunks, end: true };
        const { chunk, end } = reader.read(parseEvent(provider, event));
        if (chunk && !isEmptyChunk(chunk)) {
          answer.chars += charsOf(chunk);
          if (answer.chars > answer.maxChars) throw new LlmAnswerTooLargeError(provider, answer.maxChars);
          chunks.push(chunk);
        }
        if (end) return { chunks, end: true };
      }
      return { chunks, end: false };
    } catch (error) {
      return { chunks, end: true, failure: { error } };
    }
  }

  private requestFor(request: ChatRequest, config: LlmModelConfig, stream: boolean, signal?: AbortSignal): LlmHttpRequest {
    return {
      provider: this.protocol.provider,
      url: joinUrl(config.baseUrl ?? this.protocol.defaultBaseUrl, this.protocol.path),
      headers: this.protocol.headers(config),
      body: this.protocol.buildBody(request, config, stream),
      signal,
      headersTimeoutMs: config.headersTimeoutMs,
      idleTimeoutMs: config.idleTimeoutMs,
    };
  }
}

/**
 * Token counts in the internal shape, from a provider's `usage` object and the names its protocol
 * gives the prompt, completion and total counts; null when there is no usage object. The total
 * is the sum unless the provider states one.
 */
export function readUsage(
  raw: unknown,
  names: { prompt: string; completion: string; total?: string },
): ChatUsage | null {
  if (!isRecord(raw)) return null;
  const promptTokens = numberOr(raw[names.prompt], 0);
  const completionTokens = numberOr(raw[names.completion], 0);
  const stated = names.total === undefined ? undefined : raw[names.total];
  return { promptTokens, completionTokens, totalTokens: numberOr(stated, promptTokens + completionTokens) };
}

/** The `Authorization: Bearer` header of OpenAI's APIs and most others; none without an API key. */
export function bearerAuthHeaders(config: LlmModelConfig): Record<string, string> {
  return config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {};
}

/** An event's data as a JSON object, typed by its `type` field or else its `event:` name. */
function parseEvent(provider: string, event: SseEvent): ProviderEvent {
  let data: unknown;
  try {
    data = JSON.parse(event.data) as unknown;
  } catch {
    throw new LlmResponseError(provider, `stream event is not JSON: ${truncate(event.data, 200)}`);
  }
  if (!isRecord(data)) throw new LlmResponseError(provider, 'stream event is not a JSON object');
  return { type: typeof data.type === 'string' ? data.type : event.event, data };
}

/** Joins a base URL and a path without doubling or dropping the slash. */
function joinUrl(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** True when a chunk carries nothing, so it need not be yielded. */
function isEmptyChunk(chunk: StreamChunk): boolean {
  return (
    chunk.contentDelta === undefined &&
    chunk.thinkingDelta === undefined &&
    chunk.toolCallDeltas === undefined &&
    chunk.finishReason === undefined &&
    chunk.usage === undefined
  );
}

/** The characters a chunk adds to the answer: text, reasoning, and tool names and arguments. */
function charsOf(chunk: StreamChunk): number {
  let chars = (chunk.contentDelta?.length ?? 0) + (chunk.thinkingDelta?.length ?? 0);
  for (const delta of chunk.toolCallDeltas ?? []) {
    chars += (delta.function?.name?.length ?? 0) + (delta.function?.arguments?.length ?? 0);
  }
  return chars;
}
