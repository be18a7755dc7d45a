import type { ChatRequest, ChatResponse, LlmModelConfig, StreamChunk } from './chat-request';
import type { LlmAdapter } from './llm-adapter';
import { joinUrl, LlmHttpClient, type LlmHttpOptions, type LlmHttpRequest } from './llm-http';
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
 * (retries, backoff, cancellation, provider error messages), answered as JSON for `chat` and as
 * server-sent events for `stream`. A protocol supplies its headers, its request body and how to
 * read its answers.
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
    return this.readStream(this.http.postSse(this.requestFor(request, config, true, signal)));
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
    };
  }
}
