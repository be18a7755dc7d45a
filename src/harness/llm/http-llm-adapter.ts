import type { ChatRequest, ChatResponse, LlmModelConfig, StreamChunk } from './chat-request';
import type { LlmAdapter } from './llm-adapter';
import {
  DEFAULT_LLM_LIMITS,
  joinUrl,
  LlmAnswerTooLargeError,
  LlmHttpClient,
  type LlmHttpOptions,
  type LlmHttpRequest,
} from './llm-http';
import type { SseEvent } from './sse-parser';

/** Where a protocol's requests go and what they carry. */
export interface HttpProtocol {
  /** Name used in errors (`openai: 401 Unauthorized — ...`). */
  provider: string;
  /** Used when the model config has no `baseUrl`. */
  defaultBaseUrl: string;
  /** Path below the base URL, e.g. `chat/completions`. */
  path: string;
}

/**
 * The part every HTTP provider adapter shares: one POST per call through `LlmHttpClient`
 * (retries, backoff, timeouts, cancellation, provider error messages), answered as JSON for
 * `chat` and as server-sent events for `stream`, whose answer is held to the config's
 * `maxAnswerChars`. A protocol supplies its headers, its request body and how to read its answers.
 */
export abstract class HttpLlmAdapter implements LlmAdapter {
  private readonly http: LlmHttpClient;

  constructor(
    private readonly protocol: HttpProtocol,
    options: LlmHttpOptions = {},
  ) {
    this.http = new LlmHttpClient(options);
  }

  async chat(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse> {
    return this.readResponse(await this.http.postJson(this.requestFor(request, config, false, signal)));
  }

  stream(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncGenerator<StreamChunk> {
    const maxAnswerChars = config.maxAnswerChars ?? DEFAULT_LLM_LIMITS.maxAnswerChars;
    return this.http.postSse(this.requestFor(request, config, true, signal), (events) =>
      limitAnswer(this.readStream(events), this.protocol.provider, maxAnswerChars),
    );
  }

  protected abstract headers(config: LlmModelConfig): Record<string, string>;
  protected abstract buildBody(request: ChatRequest, config: LlmModelConfig, stream: boolean): Record<string, unknown>;
  /** The internal answer from the provider's non-streamed JSON body. */
  protected abstract readResponse(body: unknown): ChatResponse;
  /** Internal chunks from the provider's events; throws if the stream ends without its terminal event. */
  protected abstract readStream(events: AsyncIterable<SseEvent>): AsyncGenerator<StreamChunk>;

  private requestFor(request: ChatRequest, config: LlmModelConfig, stream: boolean, signal?: AbortSignal): LlmHttpRequest {
    return {
      provider: this.protocol.provider,
      url: joinUrl(config.baseUrl ?? this.protocol.defaultBaseUrl, this.protocol.path),
      headers: this.headers(config),
      body: this.buildBody(request, config, stream),
      signal,
      headersTimeoutMs: config.headersTimeoutMs,
      idleTimeoutMs: config.idleTimeoutMs,
    };
  }
}

/**
 * Passes the chunks on while the answer they add up to stays within `maxChars`; the chunk that
 * would take it past is not yielded but thrown as an {@link LlmAnswerTooLargeError}, which stops
 * the reading (and so aborts the request).
 */
async function* limitAnswer(chunks: AsyncIterable<StreamChunk>, provider: string, maxChars: number): AsyncGenerator<StreamChunk> {
  let total = 0;
  for await (const chunk of chunks) {
    total += answerChars(chunk);
    if (total > maxChars) throw new LlmAnswerTooLargeError(provider, maxChars);
    yield chunk;
  }
}

/** The characters a chunk adds to the answer: text, reasoning, and tool names and arguments. */
function answerChars(chunk: StreamChunk): number {
  let chars = (chunk.contentDelta?.length ?? 0) + (chunk.thinkingDelta?.length ?? 0);
  for (const delta of chunk.toolCallDeltas ?? []) {
    chars += (delta.function?.name?.length ?? 0) + (delta.function?.arguments?.length ?? 0);
  }
  return chars;
}
