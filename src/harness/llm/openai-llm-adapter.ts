import type {
  ChatImage,
  ChatMessage,
  ChatRequest,
  ChatResponse,
  LlmModelConfig,
  StreamChunk,
  ToolCall,
  ToolCallDelta,
} from './chat-request';
import {
  bearerAuthHeaders,
  HttpLlmAdapter,
  readUsage,
  type HttpProtocol,
  type ProviderEvent,
  type StreamEventReader,
  type StreamStep,
} from './http-llm-adapter';
import { firstString, isRecord } from './json-guards';
import { LlmResponseError } from './llm-errors';
import type { LlmHttpOptions } from './llm-http-client';
import { describeProviderError } from './provider-error-message';
import { followingImagesParts, imageDataUrl, imagesFollowNote, toolImagesOf, withNote } from './tool-images';

const PROVIDER = 'openai';
const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
const USAGE_FIELDS = { prompt: 'prompt_tokens', completion: 'completion_tokens', total: 'total_tokens' };

/**
 * OpenAI Chat Completions (`POST {baseUrl}/chat/completions`), and every server that speaks it
 * (Ollama, vLLM, LM Studio, DeepSeek, ...). The internal vocabulary is this API's, so the mapping
 * is mostly a matter of dropping internal-only fields.
 *
 * Tool messages carry text only here, so a result's images travel in a `user` message of
 * `image_url` parts placed after the round's last tool message (tool messages must follow the
 * assistant's `tool_calls` without a break); the result's text says they follow.
 */
export class OpenAiLlmAdapter extends HttpLlmAdapter {
  constructor(options: LlmHttpOptions = {}) {
    super(CHAT_COMPLETIONS, options);
  }
}

const CHAT_COMPLETIONS: HttpProtocol = {
  provider: PROVIDER,
  defaultBaseUrl: DEFAULT_BASE_URL,
  path: 'chat/completions',
  terminalEvent: '[DONE]',
  doneData: '[DONE]',
  headers: bearerAuthHeaders,
  buildBody: buildOpenAiRequestBody,
  readResponse: readChatResponse,
  streamReader: () => new ChatCompletionsStreamReader(),
};

/** The exact JSON body sent to `/chat/completions`. Exported for tests and for debugging tools. */
export function buildOpenAiRequestBody(
  request: ChatRequest,
  config: LlmModelConfig,
  stream: boolean,
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: config.model,
    messages: toOpenAiMessages(request.messages),
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

/** A tool result of the current round whose images wait for the round's tool messages to end. */
interface RoundImages {
  message: ChatMessage;
  images: ChatImage[];
}

function toOpenAiMessages(messages: ChatMessage[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let roundImages: RoundImages[] = [];
  const endRound = () => {
    if (roundImages.length > 0) out.push(followingImagesMessage(roundImages));
    roundImages = [];
  };
  for (const message of messages) {
    if (message.role !== 'tool') {
      endRound();
      out.push(toOpenAiMessage(message));
      continue;
    }
    const { images, text } = toolImagesOf(message);
    if (images.length > 0) roundImages.push({ message, images });
    const content = images.length > 0 ? withNote(text, imagesFollowNote(images.length)) : text;
    out.push({ role: 'tool', tool_call_id: message.tool_call_id ?? '', content });
  }
  endRound();
  return out;
}

/** The `user` message that shows a round's tool-result images, each result's under its call's label. */
function followingImagesMessage(results: RoundImages[]): Record<string, unknown> {
  const content = followingImagesParts(results).map((part) =>
    part.type === 'text' ? part : { type: 'image_url', image_url: { url: imageDataUrl(part.image) } },
  );
  return { role: 'user', content };
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
    default:
      return { role: message.role, content: message.content ?? '' };
  }
}

/** Reads Chat Completions chunks; each carries its own part of the answer. */
class ChatCompletionsStreamReader implements StreamEventReader {
  /** A finish reason came: the answer is whole even if `[DONE]` never does. */
  private finished = false;

  read({ data }: ProviderEvent): StreamStep {
    if (data.error !== undefined) {
      throw new LlmResponseError(PROVIDER, `stream error: ${describeProviderError(data.error)}`);
    }
    const chunk: StreamChunk = {};
    const choice = Array.isArray(data.choices) ? data.choices[0] : undefined;
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
        this.finished = true;
      }
    }
    const usage = readUsage(data.usage, USAGE_FIELDS);
    if (usage) chunk.usage = usage;
    return { chunk };
  }

  /** Some compatible servers omit [DONE]; a finish_reason still proves the answer is complete. */
  isComplete(): boolean {
    return this.finished;
  }
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
    usage: readUsage(body.usage, USAGE_FIELDS),
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
