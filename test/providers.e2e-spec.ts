import * as fs from 'node:fs';
import * as path from 'node:path';
import { WIRE_PATHS, type FakeProvider, type ProviderRequest, type WireFormat } from './support/fake-provider';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';
import type { WsEvent, WsTestClient } from './support/ws-test-client';

interface StoredMessage {
  role: string;
  content: string | null;
  toolCalls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  toolCallId?: string;
}

const PROMPT = 'Write a note, look around, then read the note back.';
const NOTE = 'hello from every provider: "quotes", ünïcødé 🚀\n';
const ROUND_1_TEXT = 'Writing the note and looking around.';
const THINKING = 'The note reads back exactly as written.';
const ANSWER = 'The note is written and reads back the same.';
const WRITE_ARGS = { path: 'notes/a.txt', content: NOTE };
const GLOB_ARGS = { pattern: 'seed/*.txt' };
const MISSING_ARGS = { path: 'missing.txt' };
const READ_ARGS = { path: 'notes/a.txt' };
const SYSTEM_PROMPT = /^You are Harness, an agent/;

/** The calls of the session: three in parallel in round 1 (the third fails), one in round 2. */
interface CallIds {
  write: string;
  glob: string;
  missing: string;
  read: string;
}

/** Each call's result content, as WebSocket clients received it. */
type Results = CallIds;

/** One protocol: its call ids as the provider makes them, and its request shape, written out. */
interface ProtocolCase {
  wire: WireFormat;
  ids: CallIds;
  /** Checks the headers and where the system prompt went; returns the conversation without it. */
  conversationOf(request: ProviderRequest): unknown[];
  /** Names of the tools the request offers. */
  toolNamesOf(request: ProviderRequest): string[];
  /** The whole conversation request 2 must carry, in the provider's own shape. */
  afterRound1(results: Results): unknown[];
  /** What request 3 adds to it. */
  afterRound2(results: Results): unknown[];
}

const json = (value: unknown) => JSON.stringify(value);

const openai: ProtocolCase = {
  wire: 'openai',
  ids: { write: 'call_write_1', glob: 'call_glob_1', missing: 'call_missing_1', read: 'call_read_2' },
  conversationOf({ headers, body }) {
    expect(headers.authorization).toBe('Bearer sk-fake');
    const messages = body.messages as Array<{ role: string; content: string }>;
    expect(messages[0]).toEqual({ role: 'system', content: expect.stringMatching(SYSTEM_PROMPT) });
    return messages.slice(1);
  },
  toolNamesOf: ({ body }) => (body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name),
  afterRound1: (r) => {
    const { ids } = openai;
    const call = (id: string, name: string, args: unknown) => ({ id, type: 'function', function: { name, arguments: json(args) } });
    return [
      { role: 'user', content: PROMPT },
      {
        role: 'assistant',
        content: ROUND_1_TEXT,
        tool_calls: [call(ids.write, 'write_file', WRITE_ARGS), call(ids.glob, 'glob', GLOB_ARGS), call(ids.missing, 'read_file', MISSING_ARGS)],
      },
      { role: 'tool', tool_call_id: ids.write, content: r.write },
      { role: 'tool', tool_call_id: ids.glob, content: r.glob },
      { role: 'tool', tool_call_id: ids.missing, content: r.missing },
    ];
  },
  afterRound2: (r) => [
    { role: 'assistant', content: null, tool_calls: [{ id: openai.ids.read, type: 'function', function: { name: 'read_file', arguments: json(READ_ARGS) } }] },
    { role: 'tool', tool_call_id: openai.ids.read, content: r.read },
  ],
};

const anthropic: ProtocolCase = {
  wire: 'anthropic',
  ids: { write: 'toolu_01Write', glob: 'toolu_01Glob', missing: 'toolu_01Missing', read: 'toolu_02Read' },
  conversationOf({ headers, body }) {
    expect(headers['x-api-key']).toBe('sk-fake');
    expect(headers['anthropic-version']).toBe('2023-06-01');
    expect(headers.authorization).toBeUndefined();
    expect(body.system).toEqual(expect.stringMatching(SYSTEM_PROMPT));
    expect(body.max_tokens).toBe(4096);
    return body.messages as unknown[];
  },
  toolNamesOf: ({ body }) => (body.tools as Array<{ name: string; input_schema: unknown }>).map((tool) => tool.name),
  afterRound1: (r) => {
    const { ids } = anthropic;
    return [
      { role: 'user', content: PROMPT },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: ROUND_1_TEXT },
          { type: 'tool_use', id: ids.write, name: 'write_file', input: WRITE_ARGS },
          { type: 'tool_use', id: ids.glob, name: 'glob', input: GLOB_ARGS },
          { type: 'tool_use', id: ids.missing, name: 'read_file', input: MISSING_ARGS },
        ],
      },
      // Every result of the round in ONE user turn, the failed one marked as such.
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: ids.write, content: r.write },
          { type: 'tool_result', tool_use_id: ids.glob, content: r.glob },
          { type: 'tool_result', tool_use_id: ids.missing, content: r.missing, is_error: true },
        ],
      },
    ];
  },
  afterRound2: (r) => [
    { role: 'assistant', content: [{ type: 'tool_use', id: anthropic.ids.read, name: 'read_file', input: READ_ARGS }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: anthropic.ids.read, content: r.read }] },
  ],
};

const responses: ProtocolCase = {
  wire: 'responses',
  ids: { write: 'call_w1', glob: 'call_g1', missing: 'call_m1', read: 'call_r2' },
  conversationOf({ headers, body }) {
    expect(headers.authorization).toBe('Bearer sk-fake');
    expect(body.instructions).toEqual(expect.stringMatching(SYSTEM_PROMPT));
    return body.input as unknown[];
  },
  toolNamesOf: ({ body }) => (body.tools as Array<{ type: string; name: string }>).map((tool) => tool.name),
  afterRound1: (r) => {
    const { ids } = responses;
    return [
      { type: 'message', role: 'user', content: PROMPT },
      { type: 'message', role: 'assistant', content: ROUND_1_TEXT },
      { type: 'function_call', call_id: ids.write, name: 'write_file', arguments: json(WRITE_ARGS) },
      { type: 'function_call', call_id: ids.glob, name: 'glob', arguments: json(GLOB_ARGS) },
      { type: 'function_call', call_id: ids.missing, name: 'read_file', arguments: json(MISSING_ARGS) },
      { type: 'function_call_output', call_id: ids.write, output: r.write },
      { type: 'function_call_output', call_id: ids.glob, output: r.glob },
      { type: 'function_call_output', call_id: ids.missing, output: r.missing },
    ];
  },
  afterRound2: (r) => [
    { type: 'function_call', call_id: responses.ids.read, name: 'read_file', arguments: json(READ_ARGS) },
    { type: 'function_call_output', call_id: responses.ids.read, output: r.read },
  ],
};

describe.each([openai, anthropic, responses])('LLM_PROTOCOL=$wire, whole process', (c: ProtocolCase) => {
  let t: TestHarness<FakeProvider>;

  beforeEach(async () => {
    t = await startTestHarness({ provider: c.wire });
  });

  afterEach(async () => {
    await t.close();
  });

  /** A CLOUD session whose workspace holds two seed files for `glob` to find. */
  async function seededSession() {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'seeded' });
    const workspace = path.join(t.workspaceRoot, 'user-1', 'seeded');
    fs.mkdirSync(path.join(workspace, 'seed'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'seed', 'one.txt'), 'one\n');
    fs.writeFileSync(path.join(workspace, 'seed', 'two.txt'), 'two\n');
    return { session, workspace };
  }

  it('runs three rounds of parallel tool calls and sends every result back in its own shape', async () => {
    const { session, workspace } = await seededSession();
    const client = await t.connect();
    const { ids } = c;
    t.provider.script(
      {
        content: ROUND_1_TEXT,
        toolCalls: [
          { id: ids.write, name: 'write_file', arguments: WRITE_ARGS },
          { id: ids.glob, name: 'glob', arguments: GLOB_ARGS },
          { id: ids.missing, name: 'read_file', arguments: MISSING_ARGS },
        ],
        usage: { input: 120, output: 30 },
      },
      { toolCalls: [{ id: ids.read, name: 'read_file', arguments: READ_ARGS }], usage: { input: 200, output: 15 } },
      { reasoning: THINKING, content: ANSWER, usage: { input: 260, output: 12 } },
    );

    const executionId = await startRun(t.userA, session.id, PROMPT);
    const end = await runEnd(client, executionId);

    // --- What WebSocket clients saw.
    const events = client.runEvents(executionId);
    expect(events.filter((event) => event.type === 'error')).toEqual([]);
    expect(events.at(-1)).toBe(end);
    expect(end.data).toEqual({ prompt_tokens: 580, completion_tokens: 57, total_tokens: 637, executionId });
    expect(textOf(events, 'content_delta')).toBe(ROUND_1_TEXT + ANSWER);

    const starts = events.filter((event) => event.type === 'tool_call_start');
    expect(starts.map((event) => [event.data.tool_call_id, event.data.tool_name])).toEqual([
      [ids.write, 'write_file'],
      [ids.glob, 'glob'],
      [ids.missing, 'read_file'],
      [ids.read, 'read_file'],
    ]);
    const argumentEvents = (id: string) =>
      events.filter((event) => (event.type === 'tool_call_start' || event.type === 'tool_call_args_delta') && event.data.tool_call_id === id);
    const argumentsOf = (id: string) => JSON.parse(argumentEvents(id).map((event) => event.data.arguments).join('')) as unknown;
    expect([ids.write, ids.glob, ids.missing, ids.read].map(argumentsOf)).toEqual([WRITE_ARGS, GLOB_ARGS, MISSING_ARGS, READ_ARGS]);
    // The arguments arrived in pieces and were passed on as pieces.
    expect(argumentEvents(ids.write).filter((event) => event.type === 'tool_call_args_delta').length).toBeGreaterThan(1);

    const resultEvents = events.filter((event) => event.type === 'tool_call_result');
    expect(resultEvents.map((event) => [event.data.tool_call_id, event.data.tool_name, event.data.status])).toEqual([
      [ids.write, 'write_file', 'success'],
      [ids.glob, 'glob', 'success'],
      [ids.missing, 'read_file', 'error'],
      [ids.read, 'read_file', 'success'],
    ]);
    const resultOf = (id: string) => String(resultEvents.find((event) => event.data.tool_call_id === id)?.data.result);
    const results: Results = { write: resultOf(ids.write), glob: resultOf(ids.glob), missing: resultOf(ids.missing), read: resultOf(ids.read) };
    expect(JSON.parse(results.glob)).toEqual({ files: ['seed/one.txt', 'seed/two.txt'], truncated: false });
    expect(JSON.parse(results.missing)).toEqual({ error: expect.stringContaining('missing.txt') });
    expect(results.read).toContain(NOTE);
    expect(events.filter((event) => event.type === 'activity').map((event) => event.data.status)).toEqual(['SUCCESS', 'SUCCESS', 'ERROR', 'SUCCESS']);

    // Round 3 thought before it answered.
    expect(events.filter((event) => event.type === 'thinking_start')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'thinking_end')).toHaveLength(1);
    expect(textOf(events, 'thinking_delta')).toBe(THINKING);
    const at = (type: string) => events.findIndex((event) => event.type === type);
    expect(at('thinking_start')).toBeGreaterThan(events.indexOf(resultEvents[3]));
    expect(at('thinking_end')).toBeLessThan(events.map((event) => event.type).lastIndexOf('content_delta'));

    expect(fs.readFileSync(path.join(workspace, 'notes', 'a.txt'), 'utf8')).toBe(NOTE);

    // --- What was stored.
    const stored = (await t.userA.get<StoredMessage[]>(`/api/sessions/${session.id}/messages`)).body;
    expect(stored.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'tool', 'assistant', 'tool', 'assistant']);
    expect(stored[1]).toEqual(expect.objectContaining({ content: ROUND_1_TEXT }));
    expect(stored[1].toolCalls?.map((call) => [call.id, call.function.name, JSON.parse(call.function.arguments)])).toEqual([
      [ids.write, 'write_file', WRITE_ARGS],
      [ids.glob, 'glob', GLOB_ARGS],
      [ids.missing, 'read_file', MISSING_ARGS],
    ]);
    expect(stored[5].toolCalls?.map((call) => call.id)).toEqual([ids.read]);
    expect(stored.filter((message) => message.role === 'tool').map((message) => [message.toolCallId, message.content])).toEqual([
      [ids.write, results.write],
      [ids.glob, results.glob],
      [ids.missing, results.missing],
      [ids.read, results.read],
    ]);
    expect(stored[7].content).toBe(ANSWER);

    // --- What the provider received: its own path and shape, the results joined by its call ids.
    expect(t.provider.requests).toHaveLength(3);
    for (const request of t.provider.requests) {
      expect(request.path).toBe(WIRE_PATHS[c.wire]);
      expect(request.body).toEqual(expect.objectContaining({ model: 'fake-model', stream: true }));
      expect(c.toolNamesOf(request)).toEqual(expect.arrayContaining(['write_file', 'glob', 'read_file']));
    }
    expect(c.conversationOf(t.provider.requests[0])).toEqual(c.afterRound1(results).slice(0, 1));
    expect(c.conversationOf(t.provider.requests[1])).toEqual(c.afterRound1(results));
    expect(c.conversationOf(t.provider.requests[2])).toEqual([...c.afterRound1(results), ...c.afterRound2(results)]);
  });

  it('retries a 429 with retry-after 0 within the run, unseen by clients', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script(
      { error: { status: 429, message: 'Rate limit reached, slow down', retryAfterSeconds: 0 } },
      { content: 'Back after the limit.', usage: { input: 40, output: 6 } },
    );

    const executionId = await startRun(t.userA, session.id, 'Say something.');
    const end = await runEnd(client, executionId);

    const events = client.runEvents(executionId);
    expect(events.filter((event) => event.type === 'error')).toEqual([]);
    expect(textOf(events, 'content_delta')).toBe('Back after the limit.');
    expect(end.data).toEqual({ prompt_tokens: 40, completion_tokens: 6, total_tokens: 46, executionId });
    expect(t.provider.requests).toHaveLength(2);
    expect(t.provider.requests[1].body).toEqual(t.provider.requests[0].body);
    expect(t.provider.pendingRounds()).toBe(0);
    const stored = (await t.userA.get<StoredMessage[]>(`/api/sessions/${session.id}/messages`)).body;
    expect(stored.map((message) => [message.role, message.content])).toEqual([
      ['user', 'Say something.'],
      ['assistant', 'Back after the limit.'],
    ]);
  });
});

describe('an LLM_PROTOCOL Harness does not know', () => {
  let t: TestHarness<FakeProvider>;

  beforeEach(async () => {
    t = await startTestHarness({ provider: 'openai', env: { LLM_PROTOCOL: 'Gemini' } });
  });

  afterEach(async () => {
    await t.close();
  });

  it('talks Chat Completions, as interface.md promises', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const client = await t.connect();
    t.provider.script({ content: 'Spoken as openai.' });

    const executionId = await startRun(t.userA, session.id, 'Hello?');
    await runEnd(client, executionId);

    expect(client.runEvents(executionId).filter((event) => event.type === 'error')).toEqual([]);
    expect(textOf(client.runEvents(executionId), 'content_delta')).toBe('Spoken as openai.');
    expect(t.provider.requests.map((request) => request.path)).toEqual(['/v1/chat/completions']);
    expect(t.provider.requests[0].body.model).toBe('fake-model');
  });
});

/** The run's `message_end`; a run that fails instead fails the test at once, with the reason. */
async function runEnd(client: WsTestClient, executionId: string): Promise<WsEvent> {
  const last = await client.waitFor(
    (event) => event.data.executionId === executionId && (event.type === 'message_end' || event.type === 'error'),
  );
  if (last.type === 'error') throw new Error(`the run failed: ${JSON.stringify(last.data)}`);
  return last;
}

function textOf(events: WsEvent[], type: string): string {
  return events
    .filter((event) => event.type === type)
    .map((event) => event.data.delta)
    .join('');
}
