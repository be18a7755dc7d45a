import type {
  ChatMessage,
  ChatRequest,
  ChatResponse,
  ChatUsage,
  LlmModelConfig,
  StreamChunk,
  ToolCall,
  ToolCallDelta,
} from './chat-request';
import { HttpLlmAdapter } from './http-llm-adapter';
import {
  describeProviderError,
  firstString,
  isEmptyChunk,
  isRecord,
  numberOr,
  LlmResponseError,
  parseEventJson,
  type LlmHttpOptions,
} from './llm-http';
import type { SseEvent } from './sse-parser';

const PROVIDER = 'openai';
const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * OpenAI Chat Completions (`POST {baseUrl}/chat/completions`), and every server that speaks it
 * (Ollama, vLLM, LM Studio, DeepSeek, ...). The internal vocabulary is this API's, so the mapping
 * is mostly a matter of dropping internal-only fields.
 */
export class OpenAiLlmAdapter extends HttpLlmAdapter {
  constructor(options: LlmHttpOptions = {}) {
    super({ provider: PROVIDER, defaultBaseUrl: DEFAULT_BASE_URL, path: 'chat/completions' }, options);
  }

  protected headers(config: LlmModelConfig): Record<string, string> {
    return authHeaders(config);
  }

  protected buildBody(request: ChatRequest, config: LlmModelConfig, stream: boolean): Record<string, unknown> {
    return buildOpenAiRequestBody(request, config, stream);
  }

  protected readResponse(body: unknown): ChatResponse {
    return readChatResponse(body);
  }

  protected async *readStream(events: AsyncIterable<SseEvent>): AsyncGenerator<StreamChunk> {
    let finished = false;
    for await (const event of events) {
      if (event.data.trim() === '[DONE]') return;
      const chunk = readStreamChunk(parseEventJson(PROVIDER, event));
      if (chunk.finishReason) finished = true;
      if (!isEmptyChunk(chunk)) yield chunk;
    }
    // Some compatible servers omit [DONE]; a finish_reason still proves the answer is complete.
    if (!finished) throw new LlmResponseError(PROVIDER, 'stream ended before [DONE]');
  }
}

/** The exact JSON body sent to `/chat/completions`. Exported for tests and for debugging tools. */
export function buildOpenAiRequestBody(
  request: ChatRequest,
  config: LlmModelConfig,
  stream: boolean,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: config.model,
    messages: request.messages.map(toOpenAiMessage),
  };
  if (request.tools && request.tools.length > 0) body.tools = request.tools;
  const temperature = request.temperature ?? config.temperature;
  if (temperature !== undefined) body.temperature = temperature;
  // `max_tokens` rather than `max_completion_tokens`: every compatible server understands it.
  const maxTokens = request.maxTokens ?? config.maxTokens;
  if (maxTokens !== undefined) body.max_tokens = maxTokens;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

function toOpenAiMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'assistant': {
      const out: Record<string, unknown> = { role: 'assistant', content: message.content };
      if (message.tool_calls && message.tool_calls.length > 0) {
        out.tool_calls = message.tool_calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.function.name, arguments: call.function.arguments },
        }));
      } else if (message.content === null) {
        out.content = '';
      }
      return out;
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.tool_call_id ?? '', content: message.content ?? '' };
    default:
      return { role: message.role, content: message.content ?? '' };
  }
}

function authHeaders(config: LlmModelConfig): Record<string, string> {
  return config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {};
}

function readStreamChunk(body: unknown): StreamChunk {
  if (!isRecord(body)) throw new LlmResponseError(PROVIDER, 'stream event is not a JSON object');
  if (body.error !== undefined) {
    throw new LlmResponseError(PROVIDER, `stream error: ${describeProviderError(body.error)}`);
  }
  const chunk: StreamChunk = {};
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (isRecord(choice)) {
    const delta = isRecord(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string' && delta.content !== '') chunk.contentDelta = delta.content;
    const thinking = firstString(delta.reasoning_content, delta.reasoning);
    if (thinking) chunk.thinkingDelta = thinking;
    if (Array.isArray(delta.tool_calls)) {
      const deltas = delta.tool_calls.filter(isRecord).map(readToolCallDelta);
      if (deltas.length > 0) chunk.toolCallDeltas = deltas;
    }
    if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') {
      chunk.finishReason = choice.finish_reason;
    }
  }
  const usage = readUsage(body.usage);
  if (usage) chunk.usage = usage;
  return chunk;
}

function readToolCallDelta(raw: Record<string, unknown>, position: number): ToolCallDelta {
  // Some compatible servers omit `index`; their calls then arrive whole, one per array slot.
  const delta: ToolCallDelta = { index: typeof raw.index === 'number' ? raw.index : position };
  if (typeof raw.id === 'string' && raw.id !== '') delta.id = raw.id;
  if (raw.type === 'function') delta.type = 'function';
  if (isRecord(raw.function)) {
    const fn: { name?: string; arguments?: string } = {};
    if (typeof raw.function.name === 'string' && raw.function.name !== '') fn.name = raw.function.name;
    if (typeof raw.function.arguments === 'string') fn.arguments = raw.function.arguments;
    delta.function = fn;
  }
  return delta;
}

function readChatResponse(body: unknown): ChatResponse {
  if (!isRecord(body)) throw new LlmResponseError(PROVIDER, 'response is not a JSON object');
  if (body.error !== undefined) throw new LlmResponseError(PROVIDER, describeProviderError(body.error));
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (!isRecord(choice) || !isRecord(choice.message)) {
    throw new LlmResponseError(PROVIDER, 'response has no choices[0].message');
  }
  const raw = choice.message;
  const message: ChatMessage = {
    role: 'assistant',
    content: typeof raw.content === 'string' ? raw.content : null,
  };
  const toolCalls = Array.isArray(raw.tool_calls) ? raw.tool_calls.filter(isRecord).map(readToolCall) : [];
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  const reasoning = firstString(raw.reasoning_content, raw.reasoning);
  if (reasoning) message.reasoning_content = reasoning;
  return {
    message,
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
    usage: readUsage(body.usage),
  };
}

function readToolCall(raw: Record<string, unknown>): ToolCall {
  const fn = isRecord(raw.function) ? raw.function : {};
  return {
    id: typeof raw.id === 'string' ? raw.id : '',
    type: 'function',
    function: {
      name: typeof fn.name === 'string' ? fn.name : '',
      arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}),
    },
  };
}

function readUsage(raw: unknown): ChatUsage | null {
  if (!isRecord(raw)) return null;
  const promptTokens = numberOr(raw.prompt_tokens, 0);
  const completionTokens = numberOr(raw.completion_tokens, 0);
  return { promptTokens, completionTokens, totalTokens: numberOr(raw.total_tokens, promptTokens + completionTokens) };
}
