import type { ChatRequest, ChatResponse, LlmModelConfig, StreamChunk, StreamRead } from './chat-request';

/** One provider protocol. Implementations own HTTP, retries and translation to the internal shape. */
export interface LlmAdapter {
  /** A whole answer. Rejects with a clear error on failure; aborts when `signal` fires. */
  chat(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse>;
  /**
   * A streamed answer. Throws (from the iterator) on failure, including a stream that ends
   * without its terminal event; stops and aborts the request when `signal` fires.
   */
  stream(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamChunk>;
  /**
   * Optional: the same answer as `stream`, each step holding what arrived together — a chunk, or
   * the chunks of one network read as a list. The agent loop reads a stream this way when it can:
   * each step of an async iterator costs a few promises and a turn of the microtask queue, which
   * in a round of 100 tool calls (three chunks a call) came to some 7% of the server's time.
   * Chunks, order and errors are exactly those of `stream`.
   */
  streamReads?(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamRead>;
}

/** An adapter's answer as `streamReads` gives it, or as `stream` does when the adapter has no `streamReads`. */
export function readsOf(adapter: LlmAdapter, request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamRead> {
  return adapter.streamReads ? adapter.streamReads(request, config, signal) : adapter.stream(request, config, signal);
}
