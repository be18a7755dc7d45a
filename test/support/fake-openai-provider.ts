import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { openAiConversationProblem } from './openai-conversation-rules';

/** One tool call the fake model makes in a round. */
export interface ScriptedToolCall {
  /** The provider's call id, as OpenAI sends it (`call_...`). */
  id: string;
  name: string;
  /** An object is sent as its JSON text; a string is sent as is (it may be malformed on purpose). */
  arguments: Record<string, unknown> | string;
}

/**
 * How a round misbehaves, as a stuck or runaway provider does. Each keeps its connection open
 * until the client goes away or the provider closes.
 * - `no-headers`: accepts the request and never answers it, not even with headers;
 * - `stall`: streams the round but for its end (finish, usage, `[DONE]`), then goes silent;
 * - `endless`: streams the round's `content` (or some text) again and again, and never finishes.
 */
export type ProviderFault = 'no-headers' | 'stall' | 'endless';

/** How the fake model answers one `POST /chat/completions`. */
export interface ScriptedRound {
  /** Streamed first, as `delta.reasoning_content` (what DeepSeek and vLLM send). */
  reasoning?: string;
  content?: string;
  toolCalls?: ScriptedToolCall[];
  usage?: { prompt_tokens: number; completion_tokens: number };
  /**
   * Holds the answer after its text (before tool calls and the finish) until the gate is released
   * or the client goes away: the way to keep a run active, mid-stream, for as long as a test needs.
   */
  gate?: Gate;
  /** Answer like a broken provider instead (see {@link ProviderFault}). */
  fault?: ProviderFault;
}

/** A request the fake provider received. */
export interface ReceivedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: ChatCompletionsBody;
  /** Resolves when the response's connection closes (answered, or aborted by the client). */
  closed: Promise<void>;
}

/** The part of a Chat Completions request body the tests read. */
export interface ChatCompletionsBody {
  model: string;
  stream?: boolean;
  messages: ProviderMessage[];
  tools?: Array<{ type: string; function: { name: string } }>;
}

export interface ProviderMessage {
  role: string;
  content: string | null;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
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
 * A stand-in for an OpenAI-compatible provider on 127.0.0.1: the n-th request gets the n-th
 * scripted round, streamed in the real wire format (`data: {chunk}\n\n` ... `data: [DONE]\n\n`).
 * It records every request body. A request with no round left gets a non-retryable 400, so a test
 * that forgot a round fails at once with a readable error instead of waiting on retries. A round
 * may play a broken provider instead ({@link ProviderFault}).
 */
export class FakeOpenAiProvider {
  readonly requests: ReceivedRequest[] = [];
  private readonly rounds: ScriptedRound[] = [];
  private readonly waiters: Array<() => void> = [];

  private constructor(
    private readonly server: http.Server,
    /** Base URL to use as `LLM_BASE_URL`. */
    readonly url: string,
  ) {}

  static async start(): Promise<FakeOpenAiProvider> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const provider = new FakeOpenAiProvider(server, `http://127.0.0.1:${port}/v1`);
    server.on('request', (req, res) => void provider.handle(req, res));
    return provider;
  }

  /** Appends rounds to the queue; each request takes the next one. */
  script(...rounds: ScriptedRound[]): void {
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
  async waitForRequest(count: number, timeoutMs = 5_000): Promise<ReceivedRequest> {
    const deadline = Date.now() + timeoutMs;
    while (this.requests.length < count) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(`fake provider: expected request ${count}, received ${this.requests.length}`);
      }
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
    const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));
    // Decoded once at the end: a multi-byte character may straddle two chunks.
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as ChatCompletionsBody;
    this.requests.push({ path: req.url ?? '', headers: req.headers, body, closed });
    for (const wake of this.waiters.splice(0)) wake();

    // Every conversation Harness sends must be one OpenAI itself would take.
    const problem = openAiConversationProblem(body.messages);
    if (problem !== null) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: problem, type: 'invalid_request_error', param: 'messages', code: null } }));
      return;
    }
    const round = this.rounds.shift();
    if (!round) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `fake provider: no round scripted for request ${this.requests.length}` } }));
      return;
    }
    // The request stays open: `close()` (closeAllConnections) or the client's abort ends it.
    if (round.fault === 'no-headers') return;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let aborted = false;
    void closed.then(() => (aborted = true));
    if (round.fault === 'endless') {
      await streamEndlessly(res, round, this.requests.length, closed, () => aborted);
      return;
    }
    const chunks = streamChunks(round, this.requests.length);
    // The role chunk, the reasoning and content pieces: hold after the last of them.
    const holdAfter = splitText(round.reasoning ?? '', CONTENT_PIECE).length + splitText(round.content ?? '', CONTENT_PIECE).length;
    // Everything but the finish and usage chunks (and `[DONE]`).
    const stallAfter = chunks.length - 3;
    for (const [index, chunk] of chunks.entries()) {
      if (aborted || res.destroyed) return;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (index === stallAfter && round.fault === 'stall') return;
      if (index === holdAfter && round.gate) await Promise.race([round.gate.opened, closed]);
      // A turn of the event loop between chunks, as a network would deliver them.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (aborted || res.destroyed) return;
    res.end('data: [DONE]\n\n');
  }
}

/** Writes the role chunk, then the content pieces over and over until the connection closes, minding backpressure. */
async function streamEndlessly(
  res: http.ServerResponse,
  round: ScriptedRound,
  requestNumber: number,
  closed: Promise<void>,
  isAborted: () => boolean,
): Promise<void> {
  // A content-only round: the role chunk, its pieces, then the finish and usage chunks left out.
  const [roleChunk, ...rest] = streamChunks({ content: round.content || 'and on ' }, requestNumber);
  const frames = rest.slice(0, -2).map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`);
  res.write(`data: ${JSON.stringify(roleChunk)}\n\n`);
  for (let index = 0; !isAborted() && !res.destroyed; index = (index + 1) % frames.length) {
    if (!res.write(frames[index])) await Promise.race([new Promise<void>((resolve) => res.once('drain', () => resolve())), closed]);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** Characters per streamed content chunk. */
const CONTENT_PIECE = 7;

/** The Chat Completions chunks of one round: role, reasoning, content pieces, tool calls, finish, usage. */
function streamChunks(round: ScriptedRound, requestNumber: number): Array<Record<string, unknown>> {
  const base = { id: `chatcmpl-fake-${requestNumber}`, object: 'chat.completion.chunk', created: 1_700_000_000, model: 'fake-model' };
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  const chunks: Array<Record<string, unknown>> = [chunk({ role: 'assistant', content: '' })];
  for (const piece of splitText(round.reasoning ?? '', CONTENT_PIECE)) chunks.push(chunk({ reasoning_content: piece }));
  for (const piece of splitText(round.content ?? '', CONTENT_PIECE)) chunks.push(chunk({ content: piece }));
  for (const [index, call] of (round.toolCalls ?? []).entries()) {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of splitText(args, 11)) chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  }
  chunks.push(chunk({}, round.toolCalls?.length ? 'tool_calls' : 'stop'));
  const usage = round.usage ?? { prompt_tokens: 100 * requestNumber, completion_tokens: 10 * requestNumber };
  chunks.push({ ...base, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } });
  return chunks;
}

function splitText(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size));
  return pieces;
}
