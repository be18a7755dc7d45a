import type { ChatRequest, ChatResponse, LlmModelConfig, StreamChunk } from './chat-request';

/** One provider protocol. Implementations own HTTP, retries and translation to the internal shape. */
export interface LlmAdapter {
  /** A whole answer. Rejects with a clear error on failure; aborts when `signal` fires. */
  chat(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse>;
  /**
   * A streamed answer. Throws (from the iterator) on failure, including a stream that ends
   * without its terminal event; stops and aborts the request when `signal` fires.
   */
  stream(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamChunk>;
}
