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
  requestProblem: (body) => openAiConversationProblem(Array.isArray(body.messages) ? body.messages : []),
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
