import { openAiConversationProblem } from './openai-conversation-rules';

/**
 * The wire formats the fake provider speaks, named as `LLM_PROTOCOL` names them: Chat
 * Completions, Anthropic Messages, OpenAI Responses.
 */
export type WireFormat = 'openai' | 'anthropic' | 'responses';

/** One tool call the fake model makes in a round. */
export interface ScriptedToolCall {
  /** The provider's call id, as the provider writes it (`call_...`, `toolu_...`). */
  id: string;
  name: string;
  /** An object is sent as its JSON text; a string is sent as is (it may be malformed on purpose). */
  arguments: Record<string, unknown> | string;
}

/** What one answer says, whatever the format: streamed as reasoning, then content, then tool calls. */
export interface Answer {
  reasoning?: string;
  content?: string;
  /** Parallel calls; each one's arguments are split over several deltas. */
  toolCalls?: ScriptedToolCall[];
  usage: { input: number; output: number };
}

/**
 * Where an event stands in an answer, which is where the fake's faults and gates cut it: `head`
 * is everything up to the end of the text, `content` the content deltas among it, `calls` the
 * tool calls, `closing` the finish, the usage and the terminal event.
 */
export type AnswerPart = 'head' | 'content' | 'calls' | 'closing';

/** One event of an answer, tagged with its part. */
export interface AnswerEvent {
  part: AnswerPart;
  event: Record<string, unknown> | typeof DONE;
}

/** An image a request carried, found where the format puts images and decoded. */
export interface ProviderImage {
  mediaType: string;
  /** The base64 as sent. */
  data: string;
  /** The decoded bytes. */
  bytes: Buffer;
  /**
   * The call whose result carries the image, where the format ties the two (an Anthropic
   * `tool_result`, a Responses `function_call_output`); absent for an image in a message of its own
   * (Chat Completions' `user` message after a round's tool messages).
   */
  toolCallId?: string;
}

/** How a provider writes its answers, its errors, and what it refuses. */
export interface WireFormatSpec {
  /** The path requests are served on, under the base URL `http://127.0.0.1:<port>/v1`. */
  path: string;
  /** The events of an answer to the `requestNumber`-th request, in the order they are sent. */
  events(answer: Answer, requestNumber: number): AnswerEvent[];
  /** One event as it goes on the wire; `sequence` is its place in the answer. */
  frame(event: AnswerEvent['event'], sequence: number): string;
  /** The provider's documented error body. */
  errorBody(status: number, message: string): unknown;
  /** Why the provider would refuse the request with a 400, in its own words; null when it would take it. */
  requestProblem?(body: Record<string, unknown>): string | null;
  /** The images of a request, in the order they appear in its body. */
  imagesOf(body: Record<string, unknown>): ProviderImage[];
}

/** Chat Completions' terminal `data: [DONE]`, which is not JSON. */
const DONE = '[DONE]';

/** Characters per streamed text piece, and per piece of a call's argument JSON. */
const TEXT_PIECE = 7;
const ARGUMENT_PIECE = 11;

/**
 * Chat Completions: `data: {chunk}` lines, the usage chunk last, then `data: [DONE]`. Every
 * conversation must be one OpenAI itself would take (tool calls answered at once, in full).
 */
const CHAT_COMPLETIONS: WireFormatSpec = {
  path: '/v1/chat/completions',
  events(answer, requestNumber) {
    const base = { id: `chatcmpl-fake-${requestNumber}`, object: 'chat.completion.chunk', created: 1_700_000_000, model: 'fake-model' };
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
      ...base,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    });
    const events: AnswerEvent[] = [{ part: 'head', event: chunk({ role: 'assistant', content: '' }) }];
    for (const piece of splitText(answer.reasoning ?? '', TEXT_PIECE)) events.push({ part: 'head', event: chunk({ reasoning_content: piece }) });
    for (const piece of splitText(answer.content ?? '', TEXT_PIECE)) events.push({ part: 'content', event: chunk({ content: piece }) });
    for (const [index, call] of (answer.toolCalls ?? []).entries()) {
      const start = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
      events.push({ part: 'calls', event: chunk({ tool_calls: [start] }) });
      for (const piece of splitText(argumentsText(call), ARGUMENT_PIECE)) {
        events.push({ part: 'calls', event: chunk({ tool_calls: [{ index, function: { arguments: piece } }] }) });
      }
    }
    const { input, output } = answer.usage;
    events.push(
      { part: 'closing', event: chunk({}, answer.toolCalls?.length ? 'tool_calls' : 'stop') },
      { part: 'closing', event: { ...base, choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } } },
      { part: 'closing', event: DONE },
    );
    return events;
  },
  frame: (event) => `data: ${event === DONE ? DONE : JSON.stringify(event)}\n\n`,
  errorBody: (status, message) => ({
    error: { message, type: status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error', param: null, code: null },
  }),
  requestProblem: (body) => {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    return openAiConversationProblem(messages) ?? chatImagesProblem(messages);
  },
  imagesOf: (body) =>
    recordsOf(body.messages).flatMap((message) =>
      recordsOf(message.content).flatMap((part) => (part.type === 'image_url' ? imageOfDataUrl(imageUrlOf(part)) : [])),
    ),
};

/**
 * Anthropic Messages: named events, one content block after another (thinking, text, tool_use),
 * input tokens in `message_start` and the output total in `message_delta`.
 */
const MESSAGES: WireFormatSpec = {
  path: '/v1/messages',
  events(answer, requestNumber) {
    const { input, output } = answer.usage;
    const message = {
      id: `msg_fake_${requestNumber}`,
      type: 'message',
      role: 'assistant',
      model: 'fake-model',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: input, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
    };
    const events: AnswerEvent[] = [
      { part: 'head', event: { type: 'message_start', message } },
      { part: 'head', event: { type: 'ping' } },
    ];
    const add = (part: AnswerPart, event: Record<string, unknown>) => events.push({ part, event });
    let index = 0;
    if (answer.reasoning) {
      add('head', { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const thinking of splitText(answer.reasoning, TEXT_PIECE)) {
        add('head', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking } });
      }
      add('head', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: `sig-fake-${requestNumber}` } });
      add('head', { type: 'content_block_stop', index });
      index++;
    }
    if (answer.content) {
      add('head', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const text of splitText(answer.content, TEXT_PIECE)) add('content', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
      add('head', { type: 'content_block_stop', index });
      index++;
    }
    for (const call of answer.toolCalls ?? []) {
      add('calls', { type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
      // The API opens every tool_use block with an empty partial_json.
      for (const partial_json of ['', ...splitText(argumentsText(call), ARGUMENT_PIECE)]) {
        add('calls', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
      }
      add('calls', { type: 'content_block_stop', index });
      index++;
    }
    add('closing', {
      type: 'message_delta',
      delta: { stop_reason: answer.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: output },
    });
    add('closing', { type: 'message_stop' });
    return events;
  },
  frame: (event) => namedEvent(event),
  errorBody: (status, message) => ({
    type: 'error',
    error: { type: status === 429 ? 'rate_limit_error' : 'invalid_request_error', message },
  }),
  requestProblem: (body) => messagesImagesProblem(recordsOf(body.messages)),
  imagesOf: (body) =>
    recordsOf(body.messages).flatMap((message) =>
      recordsOf(message.content).flatMap((block) => {
        if (block.type === 'image') return imageOfSource(block.source);
        if (block.type !== 'tool_result') return [];
        const toolCallId = String(block.tool_use_id);
        return recordsOf(block.content).flatMap((inner) => (inner.type === 'image' ? imageOfSource(inner.source, toolCallId) : []));
      }),
    ),
};

/**
 * OpenAI Responses: `response.*` events with sequence numbers; output items (reasoning, message,
 * function calls) are added, filled by deltas and done in turn; `response.completed` carries the
 * whole output and the usage.
 */
const RESPONSES: WireFormatSpec = {
  path: '/v1/responses',
  events(answer, requestNumber) {
    const { input, output } = answer.usage;
    const responseId = `resp_fake_${requestNumber}`;
    const response = (status: string, outputItems: unknown[]) => ({ id: responseId, object: 'response', model: 'fake-model', status, output: outputItems });
    const outputItems: Array<Record<string, unknown>> = [];
    const events: AnswerEvent[] = [];
    const add = (part: AnswerPart, event: Record<string, unknown>) => events.push({ part, event });
    add('head', { type: 'response.created', response: response('in_progress', []) });
    add('head', { type: 'response.in_progress', response: response('in_progress', []) });
    if (answer.reasoning) {
      const output_index = outputItems.length;
      const item_id = `rs_fake_${requestNumber}`;
      const summary = { type: 'summary_text', text: answer.reasoning };
      add('head', { type: 'response.output_item.added', output_index, item: { id: item_id, type: 'reasoning', summary: [] } });
      add('head', { type: 'response.reasoning_summary_part.added', item_id, output_index, summary_index: 0, part: { type: 'summary_text', text: '' } });
      for (const delta of splitText(answer.reasoning, TEXT_PIECE)) {
        add('head', { type: 'response.reasoning_summary_text.delta', item_id, output_index, summary_index: 0, delta });
      }
      add('head', { type: 'response.reasoning_summary_text.done', item_id, output_index, summary_index: 0, text: answer.reasoning });
      add('head', { type: 'response.reasoning_summary_part.done', item_id, output_index, summary_index: 0, part: summary });
      const item = { id: item_id, type: 'reasoning', summary: [summary] };
      add('head', { type: 'response.output_item.done', output_index, item });
      outputItems.push(item);
    }
    if (answer.content) {
      const output_index = outputItems.length;
      const item_id = `msg_fake_${requestNumber}`;
      const part = { type: 'output_text', text: answer.content, annotations: [] };
      add('head', { type: 'response.output_item.added', output_index, item: { id: item_id, type: 'message', role: 'assistant', status: 'in_progress', content: [] } });
      add('head', { type: 'response.content_part.added', item_id, output_index, content_index: 0, part: { ...part, text: '' } });
      for (const delta of splitText(answer.content, TEXT_PIECE)) {
        add('content', { type: 'response.output_text.delta', item_id, output_index, content_index: 0, delta });
      }
      add('head', { type: 'response.output_text.done', item_id, output_index, content_index: 0, text: answer.content });
      add('head', { type: 'response.content_part.done', item_id, output_index, content_index: 0, part });
      const item = { id: item_id, type: 'message', role: 'assistant', status: 'completed', content: [part] };
      add('head', { type: 'response.output_item.done', output_index, item });
      outputItems.push(item);
    }
    for (const [n, call] of (answer.toolCalls ?? []).entries()) {
      const output_index = outputItems.length;
      const item_id = `fc_fake_${requestNumber}_${n}`;
      const args = argumentsText(call);
      const item = { id: item_id, type: 'function_call', call_id: call.id, name: call.name };
      add('calls', { type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      for (const delta of splitText(args, ARGUMENT_PIECE)) {
        add('calls', { type: 'response.function_call_arguments.delta', item_id, output_index, delta });
      }
      add('calls', { type: 'response.function_call_arguments.done', item_id, output_index, arguments: args });
      const done = { ...item, status: 'completed', arguments: args };
      add('calls', { type: 'response.output_item.done', output_index, item: done });
      outputItems.push(done);
    }
    add('closing', {
      type: 'response.completed',
      response: { ...response('completed', outputItems), usage: { input_tokens: input, output_tokens: output, total_tokens: input + output } },
    });
    return events;
  },
  frame: (event, sequence) => namedEvent({ ...(event as Record<string, unknown>), sequence_number: sequence }),
  errorBody: CHAT_COMPLETIONS.errorBody,
  imagesOf: (body) =>
    recordsOf(body.input).flatMap((item) => {
      const toolCallId = item.type === 'function_call_output' ? String(item.call_id) : undefined;
      const parts = item.type === 'function_call_output' ? item.output : item.content;
      return recordsOf(parts).flatMap((part) => (part.type === 'input_image' ? imageOfDataUrl(part.image_url, toolCallId) : []));
    }),
};

/** Each wire format by its `LLM_PROTOCOL` name. */
export const WIRE_FORMATS: Readonly<Record<WireFormat, WireFormatSpec>> = {
  openai: CHAT_COMPLETIONS,
  anthropic: MESSAGES,
  responses: RESPONSES,
};

/** The path each format is served on, under the base URL `http://127.0.0.1:<port>/v1`. */
export const WIRE_PATHS: Readonly<Record<WireFormat, string>> = {
  openai: CHAT_COMPLETIONS.path,
  anthropic: MESSAGES.path,
  responses: RESPONSES.path,
};

/** The image types OpenAI and Anthropic read. */
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/**
 * Why Chat Completions would refuse the images of a conversation, in OpenAI's words: images go
 * in `user` messages only, as base64 `data:` URLs of an image type (or `https` URLs).
 */
function chatImagesProblem(messages: unknown[]): string | null {
  for (const [index, message] of recordsOf(messages).entries()) {
    for (const [partIndex, part] of recordsOf(message.content).entries()) {
      if (part.type !== 'image_url') continue;
      if (message.role !== 'user') {
        return `Invalid 'messages[${index}]'. Image URLs are only allowed for messages with role 'user', but this message with role '${String(message.role)}' contains an image URL.`;
      }
      const url = imageUrlOf(part);
      if (!url.startsWith('https://') && imageOfDataUrl(url).length === 0) {
        return `Invalid 'messages[${index}].content[${partIndex}].image_url.url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value of type ${typeof url} that does not match.`;
      }
    }
  }
  return null;
}

/**
 * Why the Messages API would refuse the images of a conversation, in Anthropic's words: an
 * error `tool_result` carries text only, and an image is non-empty base64 of an image type.
 */
function messagesImagesProblem(messages: Array<Record<string, unknown>>): string | null {
  for (const [index, message] of messages.entries()) {
    for (const [blockIndex, block] of recordsOf(message.content).entries()) {
      const at = `messages.${index}.content.${blockIndex}`;
      if (block.type === 'image') {
        const problem = imageSourceProblem(block.source, `${at}.image`);
        if (problem) return problem;
      }
      if (block.type !== 'tool_result') continue;
      const inner = recordsOf(block.content);
      if (block.is_error === true && inner.some((content) => content.type !== 'text')) {
        return `${at}.tool_result: all content must be type 'text' if 'is_error' is true`;
      }
      for (const [innerIndex, content] of inner.entries()) {
        if (content.type === 'text' && content.text === '') return `${at}.tool_result.content.${innerIndex}.text: text content blocks must be non-empty`;
        const problem = content.type === 'image' ? imageSourceProblem(content.source, `${at}.tool_result.content.${innerIndex}.image`) : null;
        if (problem) return problem;
      }
    }
  }
  return null;
}

function imageSourceProblem(source: unknown, at: string): string | null {
  const record = isRecordValue(source) ? source : {};
  if (record.type !== 'base64') return `${at}.source: Input tag '${String(record.type)}' found using 'type' does not match any of the expected tags: 'base64', 'url'`;
  if (!IMAGE_TYPES.includes(String(record.media_type))) {
    return `${at}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
  }
  if (typeof record.data !== 'string' || record.data === '') return `${at}.source.base64: image cannot be empty`;
  return null;
}

/** A Chat Completions image part's URL (`image_url` is an object with `url`, or a bare string). */
function imageUrlOf(part: Record<string, unknown>): string {
  const imageUrl = part.image_url;
  if (typeof imageUrl === 'string') return imageUrl;
  return isRecordValue(imageUrl) && typeof imageUrl.url === 'string' ? imageUrl.url : '';
}

/** The image of a base64 `data:` URL of an image type; none for anything else. */
function imageOfDataUrl(url: unknown, toolCallId?: string): ProviderImage[] {
  const match = typeof url === 'string' ? /^data:(image\/[\w.+-]+);base64,([A-Za-z0-9+/]+=*)$/.exec(url) : null;
  if (!match) return [];
  return [withCall({ mediaType: match[1], data: match[2], bytes: Buffer.from(match[2], 'base64') }, toolCallId)];
}

/** The image of an Anthropic `base64` image source; none for anything else. */
function imageOfSource(source: unknown, toolCallId?: string): ProviderImage[] {
  if (!isRecordValue(source) || source.type !== 'base64' || typeof source.data !== 'string') return [];
  return [withCall({ mediaType: String(source.media_type), data: source.data, bytes: Buffer.from(source.data, 'base64') }, toolCallId)];
}

function withCall(image: ProviderImage, toolCallId: string | undefined): ProviderImage {
  return toolCallId === undefined ? image : { ...image, toolCallId };
}

/** The objects of a value that should be an array of them; none when it is not an array. */
function recordsOf(value: unknown): Array<Record<string, unknown>> {
  return Array.isArray(value) ? value.filter(isRecordValue) : [];
}

function isRecordValue(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An event with an `event:` line naming its type, as Anthropic and the Responses API send them. */
function namedEvent(event: AnswerEvent['event']): string {
  const data = event as Record<string, unknown>;
  return `event: ${data.type as string}\ndata: ${JSON.stringify(data)}\n\n`;
}

function argumentsText(call: ScriptedToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

function splitText(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}
