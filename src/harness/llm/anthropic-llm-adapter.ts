import type { ChatImage, ChatMessage, ChatRequest, ChatResponse, ChatUsage, LlmModelConfig, StreamChunk, ToolCall } from './chat-request';
import { HttpLlmAdapter, type HttpProtocol, type ProviderEvent, type StreamEventReader, type StreamStep } from './http-llm-adapter';
import { isRecord, numberOr } from './json-guards';
import { LlmResponseError } from './llm-errors';
import type { LlmHttpOptions } from './llm-http-client';
import { describeProviderError } from './provider-error-message';
import { systemPrompt } from './system-prompt';
import { followingImagesParts, imagesFollowNote, toolImagesOf, withNote, type FollowingImagesPart } from './tool-images';

const PROVIDER = 'anthropic';
const DEFAULT_BASE_URL = 'https://api.anthropic.com/v1';
const API_VERSION = '2023-06-01';
/** The Messages API requires `max_tokens`; this is used when neither request nor config sets it. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;

type Block = Record<string, unknown>;
interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | Block[];
}

/**
 * Anthropic Messages API (`POST {baseUrl}/messages`, baseUrl like `https://api.anthropic.com/v1`).
 *
 * Mapping from the internal shape: system messages are lifted into `system`; assistant tool calls
 * become `tool_use` blocks; consecutive tool results become `tool_result` blocks of ONE user turn
 * (the API wants every result of a round in the turn right after it), with `is_error` carried.
 * A result's images are `image` blocks in its `tool_result` content, after its text; the API
 * takes only text in an error result, so those images follow the turn's results instead, under
 * a label naming the call, and the result's text says so.
 * Tool arguments that are not a JSON object are sent as `input: {}` — the API accepts nothing
 * else there, and the paired tool result already tells the model its arguments were unusable.
 * Reasoning is not sent back: Anthropic only accepts thinking blocks with their signature,
 * which the internal shape does not keep.
 */
export class AnthropicLlmAdapter extends HttpLlmAdapter {
  constructor(options: LlmHttpOptions = {}) {
    super(MESSAGES, options);
  }
}

const MESSAGES: HttpProtocol = {
  provider: PROVIDER,
  defaultBaseUrl: DEFAULT_BASE_URL,
  path: 'messages',
  terminalEvent: 'message_stop',
  headers: anthropicHeaders,
  buildBody: buildAnthropicRequestBody,
  readResponse: readMessageResponse,
  streamReader: () => new MessagesStreamReader(),
};

/** The exact JSON body sent to `/messages`. */
export function buildAnthropicRequestBody(
  request: ChatRequest,
  config: LlmModelConfig,
  stream: boolean,
): Record<string, unknown> {
  const system = systemPrompt(request.messages);
  const body: Record<string, unknown> = {
    model: config.model,
    max_tokens: request.maxTokens ?? config.maxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
  };
  if (system) body.system = system;
  body.messages = toAnthropicMessages(request.messages);
  if (request.tools && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      name: tool.function.name,
      description: tool.function.description,
      input_schema: tool.function.parameters,
    }));
  }
  const temperature = request.temperature ?? config.temperature;
  if (temperature !== undefined) body.temperature = temperature;
  if (stream) body.stream = true;
  return body;
}

/** The user turn that answers a round. */
interface ResultsTurn {
  /** Its content: the `tool_result` blocks, then (when the round ends) the images of {@link imagesAfter}. */
  blocks: Block[];
  /** Error results with images, which the API does not take inside an error `tool_result`. */
  imagesAfter: Array<{ message: ChatMessage; images: ChatImage[] }>;
}

function toAnthropicMessages(messages: ChatMessage[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = [];
  let turn: ResultsTurn | null = null;
  const endTurn = () => {
    // Any other content of the turn must come after all its tool_result blocks.
    if (turn && turn.imagesAfter.length > 0) turn.blocks.push(...followingImagesParts(turn.imagesAfter).map(toBlock));
    turn = null;
  };
  for (const message of messages) {
    if (message.role === 'tool') {
      if (!turn) {
        turn = { blocks: [], imagesAfter: [] };
        out.push({ role: 'user', content: turn.blocks });
      }
      turn.blocks.push(toolResultBlock(message, turn));
      continue;
    }
    endTurn();
    switch (message.role) {
      case 'system':
        break;
      case 'user':
        out.push({ role: 'user', content: message.content ?? '' });
        break;
      case 'assistant': {
        const blocks: Block[] = [];
        if (message.content) blocks.push({ type: 'text', text: message.content });
        for (const call of message.tool_calls ?? []) {
          const input = parseInput(call.function.arguments);
          blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input });
        }
        // The API refuses an assistant turn without content; an empty one says nothing anyway.
        if (blocks.length > 0) out.push({ role: 'assistant', content: blocks });
        break;
      }
    }
  }
  endTurn();
  return out;
}

/**
 * A tool message as a `tool_result` block: its text alone as a string, or text and image blocks.
 * An error result's images go to `turn.imagesAfter`.
 */
function toolResultBlock(message: ChatMessage, turn: ResultsTurn): Block {
  const { images, text } = toolImagesOf(message);
  const block: Block = { type: 'tool_result', tool_use_id: message.tool_call_id ?? '', content: text };
  if (message.is_error) {
    block.is_error = true;
    if (images.length > 0) {
      block.content = withNote(text, imagesFollowNote(images.length));
      turn.imagesAfter.push({ message, images });
    }
  } else if (images.length > 0) {
    // The API refuses an empty text block.
    const textBlocks: Block[] = text === '' ? [] : [{ type: 'text', text }];
    block.content = [...textBlocks, ...images.map(imageBlock)];
  }
  return block;
}

function toBlock(part: FollowingImagesPart): Block {
  return part.type === 'text' ? { type: 'text', text: part.text } : imageBlock(part.image);
}

function imageBlock(image: ChatImage): Block {
  return { type: 'image', source: { type: 'base64', media_type: image.mediaType, data: image.data } };
}

function parseInput(argumentsJson: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(argumentsJson);
    return isRecord(value) ? value : {};
  } catch {
    return {};
  }
}

function anthropicHeaders(config: LlmModelConfig): Record<string, string> {
  const result: Record<string, string> = { 'anthropic-version': API_VERSION };
  if (config.apiKey) result['x-api-key'] = config.apiKey;
  return result;
}

/** Internal finish reasons are Chat Completions'. */
function finishReasonOf(stopReason: string): string {
  switch (stopReason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
      return 'length';
    default:
      return stopReason;
  }
}

/** Follows the content blocks of one streamed message. */
class MessagesStreamReader implements StreamEventReader {
  private promptTokens = 0;
  private completionTokens = 0;
  /** Content-block index → tool-call index (tool calls are numbered in order of their blocks). */
  private readonly toolIndexByBlock = new Map<number, number>();
  /** Tool blocks that have received argument text; the others get `{}` when they stop. */
  private readonly toolBlocksWithInput = new Set<number>();

  read({ type, data }: ProviderEvent): StreamStep {
    if (type === 'message_stop') return { end: true };
    return { chunk: this.chunkOf(type, data) };
  }

  private chunkOf(type: string | undefined, data: Record<string, unknown>): StreamChunk {
    switch (type) {
      case 'message_start': {
        const message = isRecord(data.message) ? data.message : {};
        const usage = isRecord(message.usage) ? message.usage : {};
        this.promptTokens = inputTokens(usage);
        this.completionTokens = numberOr(usage.output_tokens, 0);
        return {};
      }
      case 'content_block_start':
        return this.blockStart(numberOr(data.index, 0), isRecord(data.content_block) ? data.content_block : {});
      case 'content_block_delta':
        return this.blockDelta(numberOr(data.index, 0), isRecord(data.delta) ? data.delta : {});
      case 'content_block_stop': {
        const index = numberOr(data.index, 0);
        const toolIndex = this.toolIndexByBlock.get(index);
        if (toolIndex !== undefined && !this.toolBlocksWithInput.has(index)) {
          // A tool without parameters streams no input at all; its arguments are the empty object.
          return { toolCallDeltas: [{ index: toolIndex, function: { arguments: '{}' } }] };
        }
        return {};
      }
      case 'message_delta': {
        const chunk: StreamChunk = {};
        const delta = isRecord(data.delta) ? data.delta : {};
        if (typeof delta.stop_reason === 'string') chunk.finishReason = finishReasonOf(delta.stop_reason);
        if (isRecord(data.usage)) {
          // `output_tokens` here is the running total; newer API versions repeat the input count.
          this.completionTokens = numberOr(data.usage.output_tokens, this.completionTokens);
          if (data.usage.input_tokens !== undefined) this.promptTokens = inputTokens(data.usage);
          chunk.usage = this.usage();
        }
        return chunk;
      }
      case 'error':
        throw new LlmResponseError(PROVIDER, `stream error: ${describeProviderError(data.error)}`);
      default:
        // `ping` and event types added after this adapter was written carry nothing we use.
        return {};
    }
  }

  private blockStart(index: number, block: Record<string, unknown>): StreamChunk {
    switch (block.type) {
      case 'text':
        return typeof block.text === 'string' && block.text ? { contentDelta: block.text } : {};
      case 'thinking':
        return typeof block.thinking === 'string' && block.thinking ? { thinkingDelta: block.thinking } : {};
      case 'tool_use': {
        const toolIndex = this.toolIndexByBlock.size;
        this.toolIndexByBlock.set(index, toolIndex);
        let initial = '';
        if (isRecord(block.input) && Object.keys(block.input).length > 0) {
          initial = JSON.stringify(block.input);
          this.toolBlocksWithInput.add(index);
        }
        return {
          toolCallDeltas: [
            {
              index: toolIndex,
              id: typeof block.id === 'string' ? block.id : undefined,
              type: 'function',
              function: { name: typeof block.name === 'string' ? block.name : '', arguments: initial },
            },
          ],
        };
      }
      default:
        return {};
    }
  }

  private blockDelta(index: number, delta: Record<string, unknown>): StreamChunk {
    switch (delta.type) {
      case 'text_delta':
        return typeof delta.text === 'string' && delta.text ? { contentDelta: delta.text } : {};
      case 'thinking_delta':
        return typeof delta.thinking === 'string' && delta.thinking ? { thinkingDelta: delta.thinking } : {};
      case 'input_json_delta': {
        const toolIndex = this.toolIndexByBlock.get(index);
        const partial = typeof delta.partial_json === 'string' ? delta.partial_json : '';
        if (toolIndex === undefined || partial === '') return {};
        this.toolBlocksWithInput.add(index);
        return { toolCallDeltas: [{ index: toolIndex, function: { arguments: partial } }] };
      }
      default:
        return {};
    }
  }

  private usage(): ChatUsage {
    return {
      promptTokens: this.promptTokens,
      completionTokens: this.completionTokens,
      totalTokens: this.promptTokens + this.completionTokens,
    };
  }
}

/** Cached prompt tokens are billed apart but are still part of the prompt. */
function inputTokens(usage: Record<string, unknown>): number {
  return (
    numberOr(usage.input_tokens, 0) +
    numberOr(usage.cache_creation_input_tokens, 0) +
    numberOr(usage.cache_read_input_tokens, 0)
  );
}

function readMessageResponse(body: unknown): ChatResponse {
  if (!isRecord(body)) throw new LlmResponseError(PROVIDER, 'response is not a JSON object');
  if (body.type === 'error') throw new LlmResponseError(PROVIDER, describeProviderError(body.error));
  if (!Array.isArray(body.content)) throw new LlmResponseError(PROVIDER, 'response has no content array');
  let text = '';
  let thinking = '';
  const toolCalls: ToolCall[] = [];
  for (const block of body.content) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'thinking' && typeof block.thinking === 'string') thinking += block.thinking;
    else if (block.type === 'tool_use') {
      toolCalls.push({
        id: typeof block.id === 'string' ? block.id : '',
        type: 'function',
        function: {
          name: typeof block.name === 'string' ? block.name : '',
          arguments: JSON.stringify(block.input ?? {}),
        },
      });
    }
  }
  const message: ChatMessage = { role: 'assistant', content: text || (toolCalls.length > 0 ? null : '') };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (thinking) message.reasoning_content = thinking;
  let usage: ChatUsage | null = null;
  if (isRecord(body.usage)) {
    const promptTokens = inputTokens(body.usage);
    const completionTokens = numberOr(body.usage.output_tokens, 0);
    usage = { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
  }
  return {
    message,
    finishReason: typeof body.stop_reason === 'string' ? finishReasonOf(body.stop_reason) : null,
    usage,
  };
}
