import type { ChatMessage, ChatRequest, ChatResponse, LlmModelConfig, StreamChunk, ToolCall } from './chat-request';
import {
  bearerAuthHeaders,
  HttpLlmAdapter,
  readUsage,
  type HttpProtocol,
  type ProviderEvent,
  type StreamEventReader,
  type StreamStep,
} from './http-llm-adapter';
import { isRecord, numberOr } from './json-guards';
import { LlmResponseError } from './llm-errors';
import type { LlmHttpOptions } from './llm-http-client';
import { describeProviderError } from './provider-error-message';
import { systemPrompt } from './system-prompt';
import { imageDataUrl, toolImagesOf } from './tool-images';

const PROVIDER = 'responses';
const DEFAULT_BASE_URL = 'https://api.openai.com/v1';
const USAGE_FIELDS = { prompt: 'input_tokens', completion: 'output_tokens', total: 'total_tokens' };

/**
 * OpenAI Responses API (`POST {baseUrl}/responses`).
 *
 * The conversation is sent statelessly as `input` items: text messages as `message` items,
 * assistant tool calls as `function_call` items and tool results as `function_call_output`
 * items joined by `call_id`; system messages go to `instructions`. A result with images has an
 * `output` list instead of a string: its text as `input_text`, then each image as an
 * `input_image` with a `data:` URL. Reasoning is not sent back: the API only takes it as
 * encrypted reasoning items, which the internal shape does not keep.
 */
export class ResponsesLlmAdapter extends HttpLlmAdapter {
  constructor(options: LlmHttpOptions = {}) {
    super(RESPONSES, options);
  }
}

const RESPONSES: HttpProtocol = {
  provider: PROVIDER,
  defaultBaseUrl: DEFAULT_BASE_URL,
  path: 'responses',
  terminalEvent: 'response.completed',
  headers: bearerAuthHeaders,
  buildBody: buildResponsesRequestBody,
  readResponse: readResponsesAnswer,
  streamReader: () => new ResponsesStreamReader(),
};

/** The exact JSON body sent to `/responses`. */
export function buildResponsesRequestBody(
  request: ChatRequest,
  config: LlmModelConfig,
  stream: boolean,
): Record<string, unknown> {
  const instructions = systemPrompt(request.messages);
  const body: Record<string, unknown> = { model: config.model };
  if (instructions) body.instructions = instructions;
  body.input = request.messages.flatMap(toInputItems);
  if (request.tools && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      name: tool.function.name,
      description: tool.function.description,
      parameters: tool.function.parameters,
    }));
  }
  const temperature = request.temperature ?? config.temperature;
  if (temperature !== undefined) body.temperature = temperature;
  const maxTokens = request.maxTokens ?? config.maxTokens;
  if (maxTokens !== undefined) body.max_output_tokens = maxTokens;
  if (stream) body.stream = true;
  return body;
}

function toInputItems(message: ChatMessage): Record<string, unknown>[] {
  switch (message.role) {
    case 'system':
      return [];
    case 'user':
      return [{ type: 'message', role: 'user', content: message.content ?? '' }];
    case 'assistant': {
      const items: Record<string, unknown>[] = [];
      if (message.content) items.push({ type: 'message', role: 'assistant', content: message.content });
      for (const call of message.tool_calls ?? []) {
        const { name, arguments: args } = call.function;
        items.push({ type: 'function_call', call_id: call.id, name, arguments: args });
      }
      return items;
    }
    case 'tool':
      return [{ type: 'function_call_output', call_id: message.tool_call_id ?? '', output: functionCallOutput(message) }];
  }
}

/** A tool message's `output`: its text, or its text and images as input content. */
function functionCallOutput(message: ChatMessage): string | Record<string, unknown>[] {
  const { images, text } = toolImagesOf(message);
  if (images.length === 0) return text;
  const textItems = text === '' ? [] : [{ type: 'input_text', text }];
  return [...textItems, ...images.map((image) => ({ type: 'input_image', image_url: imageDataUrl(image) }))];
}

/** One function call of the streamed response. */
interface StreamedCall {
  index: number;
  /** Length of the argument text already emitted, to tell whether a `done` event adds anything. */
  emitted: number;
}

/** Follows the output items of one streamed response. */
class ResponsesStreamReader implements StreamEventReader {
  /** Function calls by `output_index` and by item id (delta events carry both). */
  private readonly callsByOutput = new Map<number, StreamedCall>();
  private readonly callsByItemId = new Map<string, StreamedCall>();

  read({ type, data }: ProviderEvent): StreamStep {
    if (type === 'response.completed' || type === 'response.incomplete') {
      return { chunk: this.completion(type, isRecord(data.response) ? data.response : {}), end: true };
    }
    return { chunk: this.chunkOf(type, data) };
  }

  private chunkOf(type: string | undefined, data: Record<string, unknown>): StreamChunk {
    switch (type) {
      case 'response.output_text.delta':
      case 'response.refusal.delta':
        return typeof data.delta === 'string' && data.delta ? { contentDelta: data.delta } : {};
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        return typeof data.delta === 'string' && data.delta ? { thinkingDelta: data.delta } : {};
      case 'response.output_item.added':
        return this.itemAdded(numberOr(data.output_index, -1), isRecord(data.item) ? data.item : {});
      case 'response.function_call_arguments.delta': {
        const call = this.callFor(data);
        if (!call || typeof data.delta !== 'string' || data.delta === '') return {};
        call.emitted += data.delta.length;
        return { toolCallDeltas: [{ index: call.index, function: { arguments: data.delta } }] };
      }
      case 'response.function_call_arguments.done':
        return this.argumentsDone(this.callFor(data), data.arguments);
      case 'response.output_item.done': {
        const item = isRecord(data.item) ? data.item : {};
        if (item.type !== 'function_call') return {};
        return this.argumentsDone(this.callFor({ ...data, item_id: item.id }), item.arguments);
      }
      case 'response.failed': {
        const response = isRecord(data.response) ? data.response : {};
        const reason = describeProviderError(response.error ?? 'no error given');
        throw new LlmResponseError(PROVIDER, `response failed: ${reason}`);
      }
      case 'error': {
        // The event carries `code` and `message` itself (older servers nest them in `error`).
        const error = isRecord(data.error) ? data.error : { code: data.code, message: data.message };
        throw new LlmResponseError(PROVIDER, `stream error: ${describeProviderError(error)}`);
      }
      default:
        return {};
    }
  }

  private itemAdded(outputIndex: number, item: Record<string, unknown>): StreamChunk {
    if (item.type !== 'function_call') return {};
    const call: StreamedCall = { index: this.callsByOutput.size, emitted: 0 };
    this.callsByOutput.set(outputIndex, call);
    if (typeof item.id === 'string') this.callsByItemId.set(item.id, call);
    const initial = typeof item.arguments === 'string' ? item.arguments : '';
    call.emitted = initial.length;
    return {
      toolCallDeltas: [
        {
          index: call.index,
          id: typeof item.call_id === 'string' ? item.call_id : undefined,
          type: 'function',
          function: { name: typeof item.name === 'string' ? item.name : '', arguments: initial },
        },
      ],
    };
  }

  private callFor(data: Record<string, unknown>): StreamedCall | undefined {
    if (typeof data.item_id === 'string') {
      const byId = this.callsByItemId.get(data.item_id);
      if (byId) return byId;
    }
    return typeof data.output_index === 'number' ? this.callsByOutput.get(data.output_index) : undefined;
  }

  /** Some servers send the arguments only whole, in the `done` events; emit what the deltas missed. */
  private argumentsDone(call: StreamedCall | undefined, fullArguments: unknown): StreamChunk {
    if (!call || typeof fullArguments !== 'string' || fullArguments.length <= call.emitted) return {};
    const rest = fullArguments.slice(call.emitted);
    call.emitted = fullArguments.length;
    return { toolCallDeltas: [{ index: call.index, function: { arguments: rest } }] };
  }

  private completion(type: string, response: Record<string, unknown>): StreamChunk {
    const chunk: StreamChunk = { finishReason: finishReasonOf(type, response, this.callsByOutput.size > 0) };
    const usage = readUsage(response.usage, USAGE_FIELDS);
    if (usage) chunk.usage = usage;
    return chunk;
  }
}

/** Internal finish reasons are Chat Completions'. */
function finishReasonOf(type: string, response: Record<string, unknown>, hasToolCalls: boolean): string {
  if (type === 'response.incomplete' || response.status === 'incomplete') {
    const details = isRecord(response.incomplete_details) ? response.incomplete_details : {};
    return details.reason === 'content_filter' ? 'content_filter' : 'length';
  }
  return hasToolCalls ? 'tool_calls' : 'stop';
}

function readResponsesAnswer(body: unknown): ChatResponse {
  if (!isRecord(body)) throw new LlmResponseError(PROVIDER, 'response is not a JSON object');
  if (body.status === 'failed' || (isRecord(body.error) && body.output === undefined)) {
    throw new LlmResponseError(PROVIDER, `response failed: ${describeProviderError(body.error ?? 'no error given')}`);
  }
  if (!Array.isArray(body.output)) throw new LlmResponseError(PROVIDER, 'response has no output array');
  let text = '';
  let thinking = '';
  const toolCalls: ToolCall[] = [];
  for (const item of body.output) {
    if (!isRecord(item)) continue;
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (isRecord(part) && part.type === 'output_text' && typeof part.text === 'string') text += part.text;
        if (isRecord(part) && part.type === 'refusal' && typeof part.refusal === 'string') text += part.refusal;
      }
    } else if (item.type === 'reasoning') {
      for (const part of [...arrayOf(item.summary), ...arrayOf(item.content)]) {
        if (isRecord(part) && typeof part.text === 'string') thinking += part.text;
      }
    } else if (item.type === 'function_call') {
      toolCalls.push({
        id: typeof item.call_id === 'string' ? item.call_id : '',
        type: 'function',
        function: {
          name: typeof item.name === 'string' ? item.name : '',
          arguments: typeof item.arguments === 'string' ? item.arguments : '{}',
        },
      });
    }
  }
  const message: ChatMessage = { role: 'assistant', content: text || (toolCalls.length > 0 ? null : '') };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (thinking) message.reasoning_content = thinking;
  return {
    message,
    finishReason: finishReasonOf(
      body.status === 'incomplete' ? 'response.incomplete' : 'response.completed',
      body,
      toolCalls.length > 0,
    ),
    usage: readUsage(body.usage, USAGE_FIELDS),
  };
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
