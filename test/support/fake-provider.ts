import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WIRE_FORMATS, type AnswerEvent, type ProviderImage, type ScriptedToolCall, type WireFormat, type WireFormatSpec } from './wire-formats';

export { WIRE_PATHS, type ProviderImage, type ScriptedToolCall, type WireFormat } from './wire-formats';

/**
 * How a round misbehaves, as a stuck or runaway provider does. Each keeps its connection open
 * until the client goes away or the provider closes.
 * - `no-headers`: accepts the request and never answers it, not even with headers;
 * - `stall`: streams the round but for its closing events (finish, usage, the terminal event),
 *   then goes silent;
 * - `endless`: streams the round's `content` (or some text) again and again, and never finishes.
 */
export type ProviderFault = 'no-headers' | 'stall' | 'endless';

/** Token counts of a round: neutral, or in Chat Completions' words. */
export type RoundUsage = { input: number; output: number } | { prompt_tokens: number; completion_tokens: number };

/** How the fake model answers one request, whatever the format: streamed in this order. */
export interface AnswerRound {
  /** Streamed first: `reasoning_content`, a `thinking` block, or a reasoning summary. */
  reasoning?: string;
  content?: string;
  /** Parallel calls; each one's arguments are split over several deltas. */
  toolCalls?: ScriptedToolCall[];
  /** Defaults to 100 × n input and 10 × n output tokens for the n-th request. */
  usage?: RoundUsage;
  /**
   * Holds the answer after its text (before tool calls and the finish) until the gate is released
   * or the client goes away: the way to keep a run active, mid-stream, for as long as a test needs.
   */
  gate?: Gate;
  /** Answer like a broken provider instead (see {@link ProviderFault}). */
  fault?: ProviderFault;
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
export interface ProviderRequest<Body = Record<string, unknown>> {
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The three formats share no shape: a test reads it as its format's body type. */
  body: Body;
  /**
   * The images the body carries, found where its format puts them (Chat Completions `image_url`
   * parts, Anthropic `image` blocks, Responses `input_image` items) and decoded, in order.
   */
  images: ProviderImage[];
  /** Resolves when the response's connection closes (answered, or aborted by the client). */
  closed: Promise<void>;
}

/** A latch a scripted round waits on. */
export class Gate {
  readonly opened: Promise<void>;
  private open!: () => void;

  constructor() {
    this.opened = new Promise<void>((resolve) => (this.open = resolve));
  }

  release(): void {
    this.open();
  }
}

/**
 * A stand-in for a model provider on 127.0.0.1 that speaks one wire format: the n-th request gets
 * the n-th scripted round, streamed as that provider streams it (Chat Completions `data:` chunks
 * ending in `[DONE]`; Anthropic's named `message_start` … `message_stop` events; the Responses
 * API's `response.*` events with sequence numbers). It records every request, with the images
 * it carried. A request on another path gets a 404, a request the provider would refuse (over
 * Chat Completions a conversation OpenAI would reject; an image OpenAI or Anthropic would not
 * take where it is) its 400, and a request with no round left a 400 — all non-retryable, so a
 * test that misroutes or forgets a round fails at once with a readable error.
 * A round may play a broken provider instead ({@link ProviderFault}).
 */
export class FakeProvider<Body = Record<string, unknown>> {
  readonly requests: Array<ProviderRequest<Body>> = [];
  private readonly rounds: ProviderRound[] = [];
  private readonly waiters: Array<() => void> = [];
  private readonly server = http.createServer((req, res) => void this.handle(req, res));
  private readonly format: WireFormatSpec;
  private baseUrl = '';

  protected constructor(readonly wire: WireFormat) {
    this.format = WIRE_FORMATS[wire];
  }

  static start(wire: WireFormat): Promise<FakeProvider> {
    return new FakeProvider(wire).listen();
  }

  /** Base URL to use as `LLM_BASE_URL`. */
  get url(): string {
    return this.baseUrl;
  }

  /** Appends rounds to the queue; each request takes the next one. */
  script(...rounds: ProviderRound[]): void {
    this.rounds.push(...rounds);
  }

  /** Forgets what is queued and received (between tests that share the provider). */
  reset(): void {
    this.rounds.length = 0;
    this.requests.length = 0;
  }

  /** Rounds not yet requested. */
  pendingRounds(): number {
    return this.rounds.length;
  }

  /** Resolves with the `count`-th request (1-based) once it has arrived. */
  async waitForRequest(count: number, timeoutMs = 5_000): Promise<ProviderRequest<Body>> {
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

  /** Starts listening on a free port of 127.0.0.1. */
  protected async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.baseUrl = `http://127.0.0.1:${port}/v1`;
    return this;
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
    const images = this.format.imagesOf(body);
    this.requests.push({ path: req.url ?? '', headers: req.headers, body: body as Body, images, closed: connectionClosed });
    const requestNumber = this.requests.length;
    for (const wake of this.waiters.splice(0)) wake();

    if (req.method !== 'POST' || req.url !== this.format.path) {
      this.answerError(res, { status: 404, message: `fake ${this.wire} provider: no route ${req.method} ${req.url}` });
      return;
    }
    const problem = this.format.requestProblem?.(body) ?? null;
    if (problem !== null) {
      this.answerError(res, { status: 400, message: problem });
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
    const open = () => !closed && !res.destroyed;
    if (round.fault === 'endless') {
      await this.streamEndlessly(res, round, requestNumber, connectionClosed, open);
      return;
    }
    const events = this.format.events({ ...round, usage: usageOf(round, requestNumber) }, requestNumber);
    const holdAfter = lastIndexOf(events, (event) => event.part === 'head' || event.part === 'content');
    const sent = round.fault === 'stall' ? events.filter((event) => event.part !== 'closing') : events;
    for (const [index, { event }] of sent.entries()) {
      if (!open()) return;
      res.write(this.format.frame(event, index));
      if (index === holdAfter && round.gate) await Promise.race([round.gate.opened, connectionClosed]);
      // A turn of the event loop between frames, as a network would deliver them.
      await nextTurn();
    }
    if (open() && round.fault !== 'stall') res.end();
  }

  /**
   * Writes what opens a content-only answer, then its content deltas over and over until the
   * connection closes, minding backpressure.
   */
  private async streamEndlessly(
    res: http.ServerResponse,
    round: AnswerRound,
    requestNumber: number,
    closed: Promise<void>,
    open: () => boolean,
  ): Promise<void> {
    const events = this.format.events({ content: round.content || 'and on ', usage: usageOf(round, requestNumber) }, requestNumber);
    const opening = events.slice(0, events.findIndex((event) => event.part === 'content'));
    const repeated = events.filter((event) => event.part === 'content');
    let sequence = 0;
    for (const { event } of opening) res.write(this.format.frame(event, sequence++));
    for (let index = 0; open(); index = (index + 1) % repeated.length) {
      if (!res.write(this.format.frame(repeated[index].event, sequence++))) {
        await Promise.race([new Promise<void>((resolve) => res.once('drain', () => resolve())), closed]);
      }
      await nextTurn();
    }
  }

  private answerError(res: http.ServerResponse, error: ErrorRound['error']): void {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (error.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.retryAfterSeconds);
    res.writeHead(error.status, headers);
    res.end(JSON.stringify(this.format.errorBody(error.status, error.message)));
  }
}

function usageOf(round: AnswerRound, requestNumber: number): { input: number; output: number } {
  const usage = round.usage ?? { input: 100 * requestNumber, output: 10 * requestNumber };
  return 'input' in usage ? usage : { input: usage.prompt_tokens, output: usage.completion_tokens };
}

function lastIndexOf(events: AnswerEvent[], matches: (event: AnswerEvent) => boolean): number {
  for (let index = events.length - 1; index >= 0; index--) if (matches(events[index])) return index;
  return -1;
}

function nextTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}
