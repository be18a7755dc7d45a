import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProviderFault, ScriptedToolCall } from './fake-openai-provider';

/**
 * The wire formats the fake speaks, named as `LLM_PROTOCOL` names them: Chat Completions,
 * Anthropic Messages, OpenAI Responses.
 */
export type WireFormat = 'openai' | 'anthropic' | 'responses';

/** The path each format is served on, under the base URL `http://127.0.0.1:<port>/v1`. */
export const WIRE_PATHS: Readonly<Record<WireFormat, string>> = {
  openai: '/v1/chat/completions',
  anthropic: '/v1/messages',
  responses: '/v1/responses',
};

/** How the fake model answers one request, whatever the format: streamed in this order. */
export interface AnswerRound {
  /** Streamed first: `reasoning_content`, a `thinking` block, or a reasoning summary. */
  reasoning?: string;
  content?: string;
  /** Parallel calls; each one's arguments are split over several deltas. */
  toolCalls?: ScriptedToolCall[];
  /** Defaults to 100 × n input and 10 × n output tokens for the n-th request. */
  usage?: { input: number; output: number };
  /**
   * Answer like a stuck provider instead: `no-headers` never answers; `stall` streams the round
   * but for its closing events (finish, usage, the terminal event), then goes silent.
   */
  fault?: Exclude<ProviderFault, 'endless'>;
}

/** A round answered with an HTTP error in the format's own error shape. */
export interface ErrorRound {
  error: {
    status: number;
    message: string;
    /** Sent as `retry-after` (seconds). */
    retryAfterSeconds?: number;
  };
}

export type ProviderRound = AnswerRound | ErrorRound;

/** A request the fake received. The body is JSON as the adapter sent it, in the format's shape. */
export interface ProviderRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The three formats share no shape: a test reads it as its format's body type. */
  body: Record<string, unknown>;
  /** Resolves when the response's connection closes (answered, or aborted by the client). */
  closed: Promise<void>;
}

/**
 * A stand-in for a model provider on 127.0.0.1 that speaks one wire format: the n-th request gets
 * the n-th scripted round, streamed as that provider streams it (Chat Completions `data:` chunks
 * ending in `[DONE]`; Anthropic's named `message_start` … `message_stop` events; the Responses
 * API's `response.*` events with sequence numbers). It records every request. A request on
 * another path gets a 404 and a request with no round left a 400 — both non-retryable, so a test
 * that misroutes or forgets a round fails at once with a readable error.
 */
export class FakeProvider {
  readonly requests: ProviderRequest[] = [];
  private readonly rounds: ProviderRound[] = [];
  private readonly waiters: Array<() => void> = [];

  private constructor(
    private readonly server: http.Server,
    readonly wire: WireFormat,
    /** Base URL to use as `LLM_BASE_URL`. */
    readonly url: string,
  ) {}

  static async start(wire: WireFormat): Promise<FakeProvider> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const provider = new FakeProvider(server, wire, `http://127.0.0.1:${port}/v1`);
    server.on('request', (req, res) => void provider.handle(req, res));
    return provider;
  }

  /** Appends rounds to the queue; each request takes the next one. */
  script(...rounds: ProviderRound[]): void {
    this.rounds.push(...rounds);
  }

  /** Rounds not yet requested. */
  pendingRounds(): number {
    return this.rounds.length;
  }

  /** Resolves with the `count`-th request (1-based) once it has arrived. */
  async waitForRequest(count: number, timeoutMs = 5_000): Promise<ProviderRequest> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests.length < count) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`fake ${this.wire} provider: expected request ${count}, received ${this.requests.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.requests[count - 1];
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let closed = false;
    const connectionClosed = new Promise<void>((resolve) =>
      res.on('close', () => {
        closed = true;
        resolve();
      }),
    );
    // Decoded once at the end: a multi-byte character may straddle two chunks.
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as Record<string, unknown>;
    this.requests.push({ path: req.url ?? '', headers: req.headers, body, closed: connectionClosed });
    const requestNumber = this.requests.length;
    for (const wake of this.waiters.splice(0)) wake();

    if (req.method !== 'POST' || req.url !== WIRE_PATHS[this.wire]) {
      this.answerError(res, { status: 404, message: `fake ${this.wire} provider: no route ${req.method} ${req.url}` });
      return;
    }
    const round = this.rounds.shift();
    if (!round) {
      this.answerError(res, { status: 400, message: `fake ${this.wire} provider: no round scripted for request ${requestNumber}` });
      return;
    }
    if ('error' in round) {
      this.answerError(res, round.error);
      return;
    }
    // The request stays open: `close()` (closeAllConnections) or the client's abort ends it.
    if (round.fault === 'no-headers') return;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const answer = ENCODERS[this.wire](round, requestNumber);
    const frames = round.fault === 'stall' ? answer.slice(0, -CLOSING_FRAMES[this.wire]) : answer;
    for (const frame of frames) {
      if (closed || res.destroyed) return;
      res.write(frame);
      // A turn of the event loop between frames, as a network would deliver them.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (!closed && !res.destroyed && round.fault !== 'stall') res.end();
  }

  private answerError(res: http.ServerResponse, error: ErrorRound['error']): void {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
    // Each provider's documented error body.
    const body =
      this.wire === 'anthropic'
        ? { type: 'error', error: { type: error.status === 429 ? 'rate_limit_error' : 'invalid_request_error', message: error.message } }
        : { error: { message: error.message, type: error.status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error', param: null, code: null } };
    res.writeHead(error.status, headers);
    res.end(JSON.stringify(body));
  }
}

/** Characters per streamed text piece, and per piece of a call's argument JSON. */
const TEXT_PIECE = 7;
const ARGUMENT_PIECE = 11;

/** The frames that end an answer in each format: the finish and usage, and the terminal event. */
const CLOSING_FRAMES: Readonly<Record<WireFormat, number>> = {
  openai: 3, // the finish chunk, the usage chunk, `[DONE]`
  anthropic: 2, // `message_delta`, `message_stop`
  responses: 1, // `response.completed`
};

const ENCODERS: Readonly<Record<WireFormat, (round: AnswerRound, requestNumber: number) => string[]>> = {
  openai: chatCompletionsFrames,
  anthropic: messagesFrames,
  responses: responsesFrames,
};

function usageOf(round: AnswerRound, requestNumber: number): { input: number; output: number } {
  return round.usage ?? { input: 100 * requestNumber, output: 10 * requestNumber };
}

function argumentsText(call: ScriptedToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

/** Chat Completions: `data: {chunk}` lines, the usage chunk last, then `data: [DONE]`. */
function chatCompletionsFrames(round: AnswerRound, requestNumber: number): string[] {
  const base = { id: `chatcmpl-fake-${requestNumber}`, object: 'chat.completion.chunk', created: 1_700_000_000, model: 'fake-model' };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const chunks: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of splitText(round.reasoning ?? '', TEXT_PIECE)) chunks.push(chunk({ reasoning_content: piece }));
  for (const piece of splitText(round.content ?? '', TEXT_PIECE)) chunks.push(chunk({ content: piece }));
  for (const [index, call] of (round.toolCalls ?? []).entries()) {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of splitText(argumentsText(call), ARGUMENT_PIECE)) chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  }
  chunks.push(chunk({}, round.toolCalls?.length ? 'tool_calls' : 'stop'));
  const { input, output } = usageOf(round, requestNumber);
  chunks.push({ ...base, choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } });
  return [...chunks.map((data) => `data: ${JSON.stringify(data)}\n\n`), 'data: [DONE]\n\n'];
}

/**
 * Anthropic Messages: named events, one content block after another (thinking, text, tool_use),
 * input tokens in `message_start` and the output total in `message_delta`.
 */
function messagesFrames(round: AnswerRound, requestNumber: number): string[] {
  const { input, output } = usageOf(round, requestNumber);
  const events: Array<Record<string, unknown>> = [
    {
      type: 'message_start',
      message: {
        id: `msg_fake_${requestNumber}`,
        type: 'message',
        role: 'assistant',
        model: 'fake-model',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: input, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
      },
    },
    { type: 'ping' },
  ];
  let index = 0;
  if (round.reasoning) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
    for (const thinking of splitText(round.reasoning, TEXT_PIECE)) {
      events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking } });
    }
    events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: `sig-fake-${requestNumber}` } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  if (round.content) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    for (const text of splitText(round.content, TEXT_PIECE)) events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text } });
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  for (const call of round.toolCalls ?? []) {
    events.push({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
    // The API opens every tool_use block with an empty partial_json.
    for (const partial_json of ['', ...splitText(argumentsText(call), ARGUMENT_PIECE)]) {
      events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
    }
    events.push({ type: 'content_block_stop', index });
    index++;
  }
  events.push({
    type: 'message_delta',
    delta: { stop_reason: round.toolCalls?.length ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: output },
  });
  events.push({ type: 'message_stop' });
  return events.map((event) => `event: ${event.type as string}\ndata: ${JSON.stringify(event)}\n\n`);
}

/**
 * OpenAI Responses: `response.*` events with sequence numbers; output items (reasoning, message,
 * function calls) are added, filled by deltas and done in turn; `response.completed` carries the
 * whole output and the usage.
 */
function responsesFrames(round: AnswerRound, requestNumber: number): string[] {
  const { input, output } = usageOf(round, requestNumber);
  const responseId = `resp_fake_${requestNumber}`;
  const response = (status: string, outputItems: unknown[]) => ({ id: responseId, object: 'response', model: 'fake-model', status, output: outputItems });
  const outputItems: Array<Record<string, unknown>> = [];
  const events: Array<Record<string, unknown>> = [
    { type: 'response.created', response: response('in_progress', []) },
    { type: 'response.in_progress', response: response('in_progress', []) },
  ];
  if (round.reasoning) {
    const output_index = outputItems.length;
    const item_id = `rs_fake_${requestNumber}`;
    const summary = { type: 'summary_text', text: round.reasoning };
    events.push({ type: 'response.output_item.added', output_index, item: { id: item_id, type: 'reasoning', summary: [] } });
    events.push({ type: 'response.reasoning_summary_part.added', item_id, output_index, summary_index: 0, part: { type: 'summary_text', text: '' } });
    for (const delta of splitText(round.reasoning, TEXT_PIECE)) {
      events.push({ type: 'response.reasoning_summary_text.delta', item_id, output_index, summary_index: 0, delta });
    }
    events.push({ type: 'response.reasoning_summary_text.done', item_id, output_index, summary_index: 0, text: round.reasoning });
    events.push({ type: 'response.reasoning_summary_part.done', item_id, output_index, summary_index: 0, part: summary });
    const item = { id: item_id, type: 'reasoning', summary: [summary] };
    events.push({ type: 'response.output_item.done', output_index, item });
    outputItems.push(item);
  }
  if (round.content) {
    const output_index = outputItems.length;
    const item_id = `msg_fake_${requestNumber}`;
    const part = { type: 'output_text', text: round.content, annotations: [] };
    events.push({ type: 'response.output_item.added', output_index, item: { id: item_id, type: 'message', role: 'assistant', status: 'in_progress', content: [] } });
    events.push({ type: 'response.content_part.added', item_id, output_index, content_index: 0, part: { ...part, text: '' } });
    for (const delta of splitText(round.content, TEXT_PIECE)) {
      events.push({ type: 'response.output_text.delta', item_id, output_index, content_index: 0, delta });
    }
    events.push({ type: 'response.output_text.done', item_id, output_index, content_index: 0, text: round.content });
    events.push({ type: 'response.content_part.done', item_id, output_index, content_index: 0, part });
    const item = { id: item_id, type: 'message', role: 'assistant', status: 'completed', content: [part] };
    events.push({ type: 'response.output_item.done', output_index, item });
    outputItems.push(item);
  }
  for (const [n, call] of (round.toolCalls ?? []).entries()) {
    const output_index = outputItems.length;
    const item_id = `fc_fake_${requestNumber}_${n}`;
    const args = argumentsText(call);
    const item = { id: item_id, type: 'function_call', call_id: call.id, name: call.name };
    events.push({ type: 'response.output_item.added', output_index, item: { ...item, status: 'in_progress', arguments: '' } });
    for (const delta of splitText(args, ARGUMENT_PIECE)) {
      events.push({ type: 'response.function_call_arguments.delta', item_id, output_index, delta });
    }
    events.push({ type: 'response.function_call_arguments.done', item_id, output_index, arguments: args });
    const done = { ...item, status: 'completed', arguments: args };
    events.push({ type: 'response.output_item.done', output_index, item: done });
    outputItems.push(done);
  }
  events.push({
    type: 'response.completed',
    response: { ...response('completed', outputItems), usage: { input_tokens: input, output_tokens: output, total_tokens: input + output } },
  });
  return events.map((event, sequence) => `event: ${event.type as string}\ndata: ${JSON.stringify({ ...event, sequence_number: sequence })}\n\n`);
}

function splitText(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}
