import { throwIfAborted } from './abort-signal';
import type {
  ChatMessage,
  ChatRequest,
  ChatResponse,
  ChatUsage,
  LlmModelConfig,
  StreamChunk,
  ToolCall,
} from './chat-request';
import { isRecord } from './json-guards';
import type { LlmAdapter } from './llm-adapter';

/** A tool call the scripted model makes. */
export interface ScriptedToolCall {
  /** The call id; `call_<n>` (numbered per session) when absent. */
  id?: string;
  name: string;
  /**
   * A string is sent verbatim, so malformed arguments can be scripted; any other value is sent
   * as its JSON. Absent means `{}`.
   */
  arguments?: unknown;
}

/** One model answer: any of text, reasoning and tool calls. */
export interface ScriptedRound {
  content?: string;
  thinking?: string;
  toolCalls?: ScriptedToolCall[];
}

/** What `LLM_PROTOCOL=scripted` answers, round by round (interface.md, "Scripted model scenario"). */
export interface ScriptedScenario {
  rounds: ScriptedRound[];
  /**
   * Optional scripts chosen per session: the first whose `match` occurs in the session's first
   * user message answers that session instead of `rounds` (one server can then script several
   * different sessions, as the demo does).
   */
  scripts?: ScriptedScript[];
}

/** Rounds for the sessions whose first user message contains `match`. */
export interface ScriptedScript {
  match: string;
  rounds: ScriptedRound[];
}

/** A scenario that cannot be used; the message names the bad field, e.g. `rounds[1].toolCalls[0].name`. */
export class ScenarioError extends Error {
  override readonly name = 'ScenarioError';
  constructor(
    /** Path of the offending field, or `scenario` for the document itself. */
    readonly field: string,
    /** What is wrong with the field. */
    readonly detail: string,
  ) {
    super(`${field}: ${detail}`);
  }
}

/** The answer once a session has used every round. */
export const SCRIPTED_DONE_ANSWER = 'done';

const ROUND_FIELDS = new Set(['content', 'thinking', 'toolCalls']);
const TOOL_CALL_FIELDS = new Set(['id', 'name', 'arguments']);

/**
 * Validates a scenario. Accepts the parsed JSON value or JSON text. Unknown fields are refused
 * because a misspelt `toolcalls` would otherwise silently script an empty round. Reading
 * `LLM_SCRIPT` (inline or a file) is `loadHarnessConfig`'s job, which names the variable.
 */
export function parseScenario(json: unknown): ScriptedScenario {
  let value = json;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value) as unknown;
    } catch (error) {
      throw new ScenarioError('scenario', `not valid JSON (${(error as Error).message})`);
    }
  }
  if (!isRecord(value)) throw new ScenarioError('scenario', 'expected an object with a "rounds" array');
  for (const key of Object.keys(value)) {
    if (key !== 'rounds' && key !== 'scripts') throw new ScenarioError(key, 'unknown field (expected "rounds" and "scripts")');
  }
  if (!Array.isArray(value.rounds)) throw new ScenarioError('rounds', 'expected an array');
  const scenario: ScriptedScenario = { rounds: value.rounds.map((round, index) => parseRound(round, `rounds[${index}]`)) };
  if (value.scripts !== undefined) {
    if (!Array.isArray(value.scripts)) throw new ScenarioError('scripts', 'expected an array');
    scenario.scripts = value.scripts.map((script, index) => parseScript(script, `scripts[${index}]`));
  }
  return scenario;
}

function parseScript(raw: unknown, at: string): ScriptedScript {
  if (!isRecord(raw)) throw new ScenarioError(at, 'expected an object');
  for (const key of Object.keys(raw)) {
    if (key !== 'match' && key !== 'rounds') throw new ScenarioError(`${at}.${key}`, 'unknown field (expected match and rounds)');
  }
  if (typeof raw.match !== 'string' || raw.match === '') throw new ScenarioError(`${at}.match`, 'expected a non-empty string');
  if (!Array.isArray(raw.rounds)) throw new ScenarioError(`${at}.rounds`, 'expected an array');
  return { match: raw.match, rounds: raw.rounds.map((round, index) => parseRound(round, `${at}.rounds[${index}]`)) };
}

function parseRound(raw: unknown, at: string): ScriptedRound {
  if (!isRecord(raw)) throw new ScenarioError(at, 'expected an object');
  for (const key of Object.keys(raw)) {
    if (!ROUND_FIELDS.has(key)) {
      throw new ScenarioError(`${at}.${key}`, 'unknown field (expected content, thinking or toolCalls)');
    }
  }
  const round: ScriptedRound = {};
  if (raw.content !== undefined) {
    if (typeof raw.content !== 'string') throw new ScenarioError(`${at}.content`, 'expected a string');
    round.content = raw.content;
  }
  if (raw.thinking !== undefined) {
    if (typeof raw.thinking !== 'string') throw new ScenarioError(`${at}.thinking`, 'expected a string');
    round.thinking = raw.thinking;
  }
  if (raw.toolCalls !== undefined) {
    if (!Array.isArray(raw.toolCalls)) throw new ScenarioError(`${at}.toolCalls`, 'expected an array');
    round.toolCalls = raw.toolCalls.map((call, index) => parseToolCall(call, `${at}.toolCalls[${index}]`));
  }
  return round;
}

function parseToolCall(raw: unknown, at: string): ScriptedToolCall {
  if (!isRecord(raw)) throw new ScenarioError(at, 'expected an object');
  for (const key of Object.keys(raw)) {
    if (!TOOL_CALL_FIELDS.has(key)) {
      throw new ScenarioError(`${at}.${key}`, 'unknown field (expected id, name or arguments)');
    }
  }
  if (typeof raw.name !== 'string' || raw.name.trim() === '') {
    throw new ScenarioError(`${at}.name`, 'expected a non-empty string');
  }
  const call: ScriptedToolCall = { name: raw.name };
  if (raw.id !== undefined) {
    if (typeof raw.id !== 'string' || raw.id === '') throw new ScenarioError(`${at}.id`, 'expected a non-empty string');
    call.id = raw.id;
  }
  if (raw.arguments !== undefined) call.arguments = raw.arguments;
  return call;
}

/** A round resolved for one call: ids assigned and arguments as the wire string. */
interface ResolvedRound {
  content: string | null;
  thinking: string | null;
  toolCalls: ToolCall[];
  usage: ChatUsage;
}

/** Key for requests without a session id: they share one conversation of their own. */
const NO_SESSION = Symbol('no-session');

/**
 * How much of a streamed answer the scripted model delivers in one turn of the event loop: about
 * what one read of a provider's server-sent events brings when the provider is fast (a chunk of
 * Chat Completions is some 150 bytes of envelope plus its text). One chunk per turn, as before,
 * made a round of many tool calls cost three turns of the event loop per call, which no network
 * stream does.
 */
export const SCRIPTED_READ_BYTES = 8 * 1024;

/** About the bytes a chunk takes on the wire (a Chat Completions `data:` line). */
function wireSize(chunk: StreamChunk): number {
  let size = 150 + (chunk.contentDelta?.length ?? 0) + (chunk.thinkingDelta?.length ?? 0);
  for (const delta of chunk.toolCallDeltas ?? []) size += (delta.id?.length ?? 0) + (delta.function?.name?.length ?? 0) + (delta.function?.arguments?.length ?? 0);
  return size;
}

/**
 * How many of a session's requests the scripted model keeps for {@link ScriptedLlmAdapter.received}:
 * the latest, so a long demo session does not hold every conversation it ever sent.
 */
export const SCRIPTED_RECEIVED_LIMIT = 50;

/**
 * How many sessions the scripted model keeps the requests of ({@link ScriptedLlmAdapter.received}):
 * the latest to send one, so a server that runs many sessions does not hold every conversation
 * of every one of them.
 */
export const SCRIPTED_RECEIVED_SESSIONS = 20;

/**
 * The model of `LLM_PROTOCOL=scripted`: the n-th call for a session answers with the n-th round,
 * then "done". It streams like a real provider (text in word-sized pieces, tool-call arguments
 * in several fragments by index, a last chunk with finish reason and usage), delivered in
 * network-sized reads (`SCRIPTED_READ_BYTES`), so the agent loop and the WebSocket clients see the
 * same event sequence as with a real model. It records what the latest sessions sent
 * ({@link received}), images included, as a real provider's tests read its requests.
 */
export class ScriptedLlmAdapter implements LlmAdapter {
  private readonly callsBySession = new Map<number | typeof NO_SESSION, number>();
  private readonly generatedIdsBySession = new Map<number | typeof NO_SESSION, number>();
  private readonly receivedBySession = new Map<number | typeof NO_SESSION, ChatRequest[]>();

  constructor(private readonly scenario: ScriptedScenario) {}

  async chat(request: ChatRequest, _config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse> {
    throwIfAborted(signal);
    const round = this.nextRound(request);
    const message: ChatMessage = {
      role: 'assistant',
      content: round.content ?? (round.toolCalls.length > 0 ? null : ''),
    };
    if (round.toolCalls.length > 0) message.tool_calls = round.toolCalls;
    if (round.thinking !== null) message.reasoning_content = round.thinking;
    return { message, finishReason: finishReasonOf(round), usage: round.usage };
  }

  async *stream(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncGenerator<StreamChunk> {
    for await (const read of this.streamReads(request, config, signal)) {
      for (const chunk of read) {
        throwIfAborted(signal);
        yield chunk;
      }
    }
  }

  /**
   * The chunks of `stream`, a read at a time: each read (about `SCRIPTED_READ_BYTES` of a
   * provider's wire format) a turn of the event loop after the one before, so a cancel issued
   * while a long answer streams lands in the middle of it.
   */
  async *streamReads(request: ChatRequest, _config: LlmModelConfig, signal?: AbortSignal): AsyncGenerator<readonly StreamChunk[]> {
    throwIfAborted(signal);
    const round = this.nextRound(request);
    let read: StreamChunk[] = [];
    let readBytes = 0;
    for (const chunk of chunksOf(round)) {
      const size = wireSize(chunk);
      if (read.length > 0 && readBytes + size > SCRIPTED_READ_BYTES) {
        yield* this.deliver(read, signal);
        read = [];
        readBytes = 0;
      }
      read.push(chunk);
      readBytes += size;
    }
    if (read.length > 0) yield* this.deliver(read, signal);
  }

  /** One read: a turn of the event loop after the one before (or after the request), unless cancelled. */
  private async *deliver(read: readonly StreamChunk[], signal: AbortSignal | undefined): AsyncGenerator<readonly StreamChunk[]> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    throwIfAborted(signal);
    yield read;
  }

  /**
   * The requests a session sent (`null`: those without a session), oldest first, as they were
   * when they came: each message with its images and attachments. At most the latest
   * {@link SCRIPTED_RECEIVED_LIMIT}; nothing for a session that is not among the latest
   * {@link SCRIPTED_RECEIVED_SESSIONS} to send one.
   */
  received(sessionId: number | null): ChatRequest[] {
    return [...(this.receivedBySession.get(sessionId ?? NO_SESSION) ?? [])];
  }

  /**
   * Forgets the progress of one session (or of all sessions), so it starts again at round 1,
   * and what it received.
   */
  reset(sessionId?: number | null): void {
    if (sessionId === undefined) {
      this.callsBySession.clear();
      this.generatedIdsBySession.clear();
      this.receivedBySession.clear();
      return;
    }
    const key = sessionId ?? NO_SESSION;
    this.callsBySession.delete(key);
    this.generatedIdsBySession.delete(key);
    this.receivedBySession.delete(key);
  }

  private record(key: number | typeof NO_SESSION, request: ChatRequest): void {
    const received = this.receivedBySession.get(key) ?? [];
    received.push(snapshotOf(request));
    if (received.length > SCRIPTED_RECEIVED_LIMIT) received.shift();
    // Re-inserted, so the map's first entry is the session that sent nothing for the longest.
    this.receivedBySession.delete(key);
    this.receivedBySession.set(key, received);
    if (this.receivedBySession.size > SCRIPTED_RECEIVED_SESSIONS) this.receivedBySession.delete(this.receivedBySession.keys().next().value!);
  }

  /** The script picked by the conversation's first user message, else the scenario's rounds. */
  private roundsFor(request: ChatRequest): ScriptedRound[] {
    const first = request.messages.find((message) => message.role === 'user')?.content ?? '';
    return this.scenario.scripts?.find((script) => first.includes(script.match))?.rounds ?? this.scenario.rounds;
  }

  private nextRound(request: ChatRequest): ResolvedRound {
    const key = request.sessionId ?? NO_SESSION;
    this.record(key, request);
    const n = this.callsBySession.get(key) ?? 0;
    this.callsBySession.set(key, n + 1);
    const round: ScriptedRound = this.roundsFor(request)[n] ?? { content: SCRIPTED_DONE_ANSWER };

    const toolCalls = (round.toolCalls ?? []).map((call): ToolCall => {
      let id = call.id;
      if (id === undefined) {
        const next = (this.generatedIdsBySession.get(key) ?? 0) + 1;
        this.generatedIdsBySession.set(key, next);
        id = `call_${next}`;
      }
      return { id, type: 'function', function: { name: call.name, arguments: argumentsText(call.arguments) } };
    });
    const content = round.content ?? null;
    const thinking = round.thinking ?? null;
    const completionText =
      (content ?? '') + (thinking ?? '') + toolCalls.map((c) => c.function.name + c.function.arguments).join('');
    const promptText = request.messages.map((m) => (m.content ?? '') + JSON.stringify(m.tool_calls ?? '')).join('');
    const promptTokens = estimateTokens(promptText);
    const completionTokens = estimateTokens(completionText);
    return {
      content,
      thinking,
      toolCalls,
      usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens },
    };
  }
}

/**
 * A request as it is now, safe from later changes to the caller's conversation: the arrays and
 * objects are copied; the strings (base64 images among them) are shared, as they cannot change.
 */
function snapshotOf(request: ChatRequest): ChatRequest {
  const snapshot: ChatRequest = { ...request, messages: request.messages.map(snapshotOfMessage) };
  if (request.tools) snapshot.tools = request.tools.map((tool) => ({ ...tool, function: { ...tool.function } }));
  return snapshot;
}

function snapshotOfMessage(message: ChatMessage): ChatMessage {
  const snapshot: ChatMessage = { ...message };
  if (message.tool_calls) snapshot.tool_calls = message.tool_calls.map((call) => ({ ...call, function: { ...call.function } }));
  if (message.images) snapshot.images = message.images.map((image) => ({ ...image }));
  if (message.attachments) snapshot.attachments = message.attachments.map((attachment) => ({ ...attachment }));
  return snapshot;
}

function argumentsText(value: unknown): string {
  if (value === undefined) return '{}';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** About four characters a token, as the usual rule of thumb for English text. */
function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function finishReasonOf(round: ResolvedRound): string {
  return round.toolCalls.length > 0 ? 'tool_calls' : 'stop';
}

function chunksOf(round: ResolvedRound): StreamChunk[] {
  const chunks: StreamChunk[] = [];
  if (round.thinking) for (const piece of splitWords(round.thinking)) chunks.push({ thinkingDelta: piece });
  if (round.content) for (const piece of splitWords(round.content)) chunks.push({ contentDelta: piece });
  round.toolCalls.forEach((call, index) => {
    chunks.push({
      toolCallDeltas: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
    });
    for (const piece of splitInto(call.function.arguments, 3)) {
      chunks.push({ toolCallDeltas: [{ index, function: { arguments: piece } }] });
    }
  });
  chunks.push({ finishReason: finishReasonOf(round), usage: round.usage });
  return chunks;
}

/** Word-sized pieces (a word with the spaces after it), as providers stream text. */
function splitWords(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? [text];
}

/** At most `parts` pieces of roughly equal length, never splitting a surrogate pair. */
function splitInto(text: string, parts: number): string[] {
  const chars = Array.from(text);
  if (chars.length === 0) return [];
  const size = Math.ceil(chars.length / parts);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(''));
  return pieces;
}
