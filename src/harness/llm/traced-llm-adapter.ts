import { SpanKind, type Span } from '@opentelemetry/api';
import { GenAiAttributes, markFailed, providerName, startGenAiSpan, withSpan } from '../runtime/gen-ai-tracing';
import { errorMessage } from '../runtime/error-message';
import { isChunkList, type ChatRequest, type ChatResponse, type ChatUsage, type LlmModelConfig, type StreamChunk, type StreamRead } from './chat-request';
import { readsOf, type LlmAdapter } from './llm-adapter';

/**
 * An `LlmAdapter` that records each model call as a `chat {model}` span (GenAI semantic
 * conventions: provider, model, finish reasons, token usage; `error.type` and status ERROR on a
 * failure). Without a tracing SDK the span does not record and the call goes straight to the
 * wrapped adapter, streamed chunks untouched.
 */
export class TracedLlmAdapter implements LlmAdapter {
  constructor(private readonly inner: LlmAdapter) {}

  async chat(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse> {
    const span = startChatSpan(request, config);
    if (!span.isRecording()) return this.inner.chat(request, config, signal);
    try {
      const response = await withSpan(span, () => this.inner.chat(request, config, signal));
      recordAnswer(span, response.finishReason, response.usage);
      return response;
    } catch (error) {
      markFailed(span, errorType(error), errorMessage(error));
      throw error;
    } finally {
      span.end();
    }
  }

  stream(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamChunk> {
    const span = startChatSpan(request, config);
    if (!span.isRecording()) return this.inner.stream(request, config, signal);
    return tracedStream(span, () => this.inner.stream(request, config, signal));
  }

  /** The wrapped adapter's `streamReads` (or `stream`), in the same span as `stream`. */
  streamReads(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamRead> {
    const span = startChatSpan(request, config);
    if (!span.isRecording()) return readsOf(this.inner, request, config, signal);
    return tracedStream(span, () => readsOf(this.inner, request, config, signal));
  }
}

async function* tracedStream<T extends StreamRead>(span: Span, open: () => AsyncIterable<T>): AsyncGenerator<T> {
  let finishReason: string | null = null;
  let usage: ChatUsage | null = null;
  let done = false;
  // Each step of the provider's stream runs with the span active, so what it does (an HTTP
  // request, if instrumented) nests under it.
  const iterator = withSpan(span, () => open()[Symbol.asyncIterator]());
  try {
    for (;;) {
      const next = await withSpan(span, () => iterator.next());
      if (next.done) break;
      for (const chunk of chunksIn(next.value)) {
        if (chunk.finishReason) finishReason = chunk.finishReason;
        if (chunk.usage) usage = chunk.usage;
      }
      yield next.value;
    }
    done = true;
  } catch (error) {
    done = true;
    markFailed(span, errorType(error), errorMessage(error));
    throw error;
  } finally {
    // A stream the run stopped reading (cancelled) ends here too: the provider's stream is closed.
    if (!done) void iterator.return?.()?.catch(() => undefined);
    recordAnswer(span, finishReason, usage);
    span.end();
  }
}

function chunksIn(read: StreamRead): readonly StreamChunk[] {
  return isChunkList(read) ? read : [read];
}

function startChatSpan(request: ChatRequest, config: LlmModelConfig): Span {
  const attributes: Record<string, string | number> = {
    [GenAiAttributes.PROVIDER_NAME]: providerName(config.protocol),
    [GenAiAttributes.REQUEST_MODEL]: config.model,
  };
  if (config.maxTokens !== undefined) attributes[GenAiAttributes.REQUEST_MAX_TOKENS] = config.maxTokens;
  if (config.temperature !== undefined) attributes[GenAiAttributes.REQUEST_TEMPERATURE] = config.temperature;
  if (request.sessionId != null) attributes[GenAiAttributes.CONVERSATION_ID] = String(request.sessionId);
  // A model in this process (the scripted one) is no remote call.
  const kind = config.protocol === 'scripted' ? SpanKind.INTERNAL : SpanKind.CLIENT;
  return startGenAiSpan(`chat ${config.model}`, 'chat', kind, attributes);
}

function recordAnswer(span: Span, finishReason: string | null, usage: ChatUsage | null): void {
  if (finishReason) span.setAttribute(GenAiAttributes.RESPONSE_FINISH_REASONS, [finishReason]);
  if (usage) {
    span.setAttribute(GenAiAttributes.USAGE_INPUT_TOKENS, usage.promptTokens);
    span.setAttribute(GenAiAttributes.USAGE_OUTPUT_TOKENS, usage.completionTokens);
  }
}

/** A low-cardinality name for what failed: the error's class name (`LlmHttpError`, `AbortError`, …). */
function errorType(error: unknown): string {
  return error instanceof Error && error.name ? error.name : '_OTHER';
}
