import type { StoredMessage, WsEvent } from '../api/wire';
import { EMPTY_CONVERSATION, type Conversation, type RunItem, type ToolCallView } from './conversation';
import { applyEvent, markInterrupted, startRun, withPrompts } from './conversation-events';

const RUN = 'run-1';

/** Numbers events in the order given, as the server's log does. */
function stream(...events: Array<[string, Record<string, unknown>]>): WsEvent[] {
  return events.map(([type, data], index) => ({ type, sessionId: 7, data: { executionId: RUN, ...data }, timestamp: 1000 + index * 10, seq: index + 1 }));
}

function fold(events: WsEvent[], from: Conversation = EMPTY_CONVERSATION): Conversation {
  return events.reduce(applyEvent, from);
}

function userMessage(id: number, executionId: string, content: string): StoredMessage {
  return { id, role: 'user', executionId, content, createdAt: '2026-01-01T00:00:00Z' };
}

function calls(conversation: Conversation, runIndex = 0): ToolCallView[] {
  return conversation.runs[runIndex].items.flatMap((item) => (item.kind === 'tool' ? [item.call] : []));
}

function kinds(items: RunItem[]): string[] {
  return items.map((item) => item.kind);
}

describe('applyEvent', () => {
  it('turns a run of text, reasoning and tool calls into its pieces, in order', () => {
    const conversation = fold(
      stream(
        ['content_delta', { delta: 'Looking ' }],
        ['content_delta', { delta: 'around.' }],
        ['tool_call_start', { tool_call_id: 'c1', tool_name: 'read_file', arguments: '' }],
        ['tool_call_args_delta', { tool_call_id: 'c1', arguments: '{"path":' }],
        ['tool_call_args_delta', { tool_call_id: 'c1', arguments: '"a.txt"}' }],
        ['tool_call_progress', { tool_call_id: 'c1', progress: 1, total: 4, message: 'reading' }],
        ['tool_call_result', { tool_call_id: 'c1', tool_name: 'read_file', result: 'alpha', status: 'success', summary: 'Read a.txt' }],
        ['activity', { id: 1, type: 'file_read', target: 'a.txt', summary: 'Read a.txt', status: 'SUCCESS' }],
        ['thinking_start', {}],
        ['thinking_delta', { delta: 'Done reading.' }],
        ['thinking_end', {}],
        ['content_delta', { delta: 'It says alpha.' }],
        ['message_end', { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }],
      ),
    );
    const [run] = conversation.runs;
    expect(run.state).toBe('finished');
    expect(run.usage).toEqual({ promptTokens: 10, completionTokens: 5, totalTokens: 15 });
    expect(kinds(run.items)).toEqual(['text', 'tool', 'thinking', 'text']);
    expect(run.items[0]).toEqual(expect.objectContaining({ text: 'Looking around.' }));
    expect(run.items[2]).toEqual(expect.objectContaining({ text: 'Done reading.', done: true }));
    expect(calls(conversation)).toEqual([
      expect.objectContaining({ callId: 'c1', toolName: 'read_file', arguments: '{"path":"a.txt"}', status: 'success', result: 'alpha', summary: 'Read a.txt', progress: null, startedAt: 1020, endedAt: 1060 }),
    ]);
  });

  it('shows a running call’s latest progress', () => {
    const conversation = fold(
      stream(
        ['tool_call_start', { tool_call_id: 'c1', tool_name: 'mcp__slow__work', arguments: '{}' }],
        ['tool_call_progress', { tool_call_id: 'c1', progress: 100, total: 1000, message: 'worked 100 of 1000 ms' }],
        ['tool_call_progress', { tool_call_id: 'c1', progress: 350, total: 1000 }],
      ),
    );
    expect(calls(conversation)[0]).toEqual(expect.objectContaining({ status: 'running', progress: { progress: 350, total: 1000 } }));
    expect(conversation.runs[0].state).toBe('running');
  });

  it('keeps a result’s attachments and marks calls the run’s cancellation stopped', () => {
    const attachment = { id: 'att_1', mediaType: 'image/png', bytes: 70, name: 'shot.png' };
    const conversation = fold(
      stream(
        ['tool_call_start', { tool_call_id: 'c1', tool_name: 'mcp__content__pixel', arguments: '{}' }],
        ['tool_call_start', { tool_call_id: 'c2', tool_name: 'shell', arguments: '{}' }],
        ['tool_call_result', { tool_call_id: 'c1', result: '[image]', status: 'success', attachments: [attachment, { id: 7 }] }],
        ['tool_call_result', { tool_call_id: 'c2', result: 'Tool execution cancelled: the run was cancelled before the tool finished', status: 'error' }],
        ['message_end', {}],
      ),
    );
    expect(calls(conversation).map((call) => [call.callId, call.status, call.attachments])).toEqual([
      ['c1', 'success', [attachment]],
      ['c2', 'cancelled', []],
    ]);
    expect(conversation.runs[0].cancelled).toBe(true);
  });

  it('gives a call id used again after its result a card of its own', () => {
    const conversation = fold(
      stream(
        ['tool_call_start', { tool_call_id: 'call_0', tool_name: 'glob', arguments: '{}' }],
        ['tool_call_result', { tool_call_id: 'call_0', result: 'first', status: 'success' }],
        ['tool_call_start', { tool_call_id: 'call_0', tool_name: 'read_file', arguments: '' }],
        ['tool_call_args_delta', { tool_call_id: 'call_0', arguments: '{}' }],
        ['tool_call_result', { tool_call_id: 'call_0', result: 'second', status: 'error' }],
      ),
    );
    expect(calls(conversation).map((call) => [call.toolName, call.arguments, call.result, call.status])).toEqual([
      ['glob', '{}', 'first', 'success'],
      ['read_file', '{}', 'second', 'error'],
    ]);
  });

  it('ends a run with a final error, and shows other errors as notes in the run', () => {
    const conversation = fold(
      stream(['error', { message: 'MCP server web: unreachable', final: false }], ['error', { message: 'the model failed', final: true }]),
    );
    expect(conversation.runs[0]).toEqual(expect.objectContaining({ state: 'failed', error: 'the model failed' }));
    expect(conversation.runs[0].items).toEqual([expect.objectContaining({ kind: 'notice', message: 'MCP server web: unreachable' })]);
  });

  it('leaves out events of no run', () => {
    const event: WsEvent = { type: 'error', sessionId: 7, data: { message: 'bad frame', final: false }, timestamp: 0 };
    expect(applyEvent(EMPTY_CONVERSATION, event)).toBe(EMPTY_CONVERSATION);
  });

  describe('approvals', () => {
    it('puts the request on its call’s card and shows how it was settled', () => {
      const events = stream(
        ['tool_call_start', { tool_call_id: 'c1', tool_name: 'shell', arguments: '{"command":"ls"}' }],
        [
          'approval_request',
          { requestId: 'a1', toolCallId: 'c1', toolName: 'shell', arguments: '{"command":"ls"}', reason: 'Shell commands need approval at READ_WRITE', expiresAt: '2026-01-01T10:10:00.000Z' },
        ],
      );
      const pending = fold(events);
      expect(calls(pending)).toEqual([
        expect.objectContaining({
          callId: 'c1',
          approval: { requestId: 'a1', reason: 'Shell commands need approval at READ_WRITE', outcome: 'pending', message: null, expiresAt: '2026-01-01T10:10:00.000Z' },
        }),
      ]);

      const resolved = fold(stream(...events.map((event) => [event.type, event.data] as [string, Record<string, unknown>]), ['approval_resolved', { requestId: 'a1', outcome: 'denied', message: 'not now' }]));
      expect(calls(resolved)[0].approval).toEqual(expect.objectContaining({ outcome: 'denied', message: 'not now' }));
      // Settled by an answer, the event may carry no run id: the request id finds the card.
      const unowned: WsEvent = { type: 'approval_resolved', sessionId: 7, data: { requestId: 'a1', outcome: 'approved' }, timestamp: 0, seq: 3 };
      expect(calls(applyEvent(pending, unowned))[0].approval?.outcome).toBe('approved');
    });

    it('makes a card for a request whose call it has not seen, with the request’s arguments', () => {
      const conversation = fold(stream(['approval_request', { requestId: 'a1', toolCallId: 'c9', toolName: 'mcp__web__fetch', arguments: { url: 'x' }, reason: 'MCP tool' }]));
      expect(calls(conversation)).toEqual([expect.objectContaining({ callId: 'c9', toolName: 'mcp__web__fetch', arguments: '{"url":"x"}', status: 'running' })]);
    });
  });

  describe('questions', () => {
    const asked: Array<[string, Record<string, unknown>]> = [
      ['tool_call_start', { tool_call_id: 'q', tool_name: 'ask_user_questions', arguments: '{}' }],
      ['ask_user_questions', { requestId: 'r1', questions: [{ question: 'Which colour?', options: ['red', 'blue'] }, { question: 'Title?' }, { nope: 1 }] }],
    ];

    it('are pending until the model reads the answers', () => {
      const pending = fold(stream(...asked));
      expect(pending.runs[0].items[1]).toEqual(
        expect.objectContaining({ kind: 'questions', questions: { requestId: 'r1', questions: [{ question: 'Which colour?', options: ['red', 'blue'] }, { question: 'Title?' }], state: 'pending', answers: undefined } }),
      );
      const answered = fold(stream(...asked, ['tool_call_result', { tool_call_id: 'q', tool_name: 'ask_user_questions', result: '{"answers":{"Which colour?":"blue"}}', status: 'success' }]));
      expect(answered.runs[0].items[1]).toEqual(expect.objectContaining({ questions: expect.objectContaining({ state: 'answered', answers: { 'Which colour?': 'blue' } }) }));
    });

    it('are withdrawn when cancelled, and closed when the run ends unanswered', () => {
      const cancelled = fold(stream(...asked, ['ask_user_questions_cancelled', { requestId: 'r1' }]));
      expect(cancelled.runs[0].items[1]).toEqual(expect.objectContaining({ questions: expect.objectContaining({ state: 'cancelled' }) }));
      const closed = fold(stream(...asked, ['message_end', {}]));
      expect(closed.runs[0].items[1]).toEqual(expect.objectContaining({ questions: expect.objectContaining({ state: 'closed' }) }));
    });
  });

  describe('desktop requests (LOCAL)', () => {
    it('attach to the oldest running call of the tool, and show when they are withdrawn', () => {
      const conversation = fold(
        stream(
          ['tool_call_start', { tool_call_id: 'c1', tool_name: 'read_file', arguments: '{}' }],
          ['tool_call_start', { tool_call_id: 'c2', tool_name: 'read_file', arguments: '{}' }],
          ['tool_request', { requestId: 'd1', toolName: 'read_file', arguments: '{}', workspace: 'w', needApproval: false, dangerReason: null }],
          ['tool_request', { requestId: 'd2', toolName: 'read_file', arguments: '{}', workspace: 'w', needApproval: true, dangerReason: 'writes' }],
          ['tool_request_cancelled', { requestId: 'd2', reason: 'the run was cancelled' }],
        ),
      );
      expect(calls(conversation).map((call) => call.desktop)).toEqual([
        { requestId: 'd1', needApproval: false, dangerReason: null, withdrawnBecause: null },
        { requestId: 'd2', needApproval: true, dangerReason: 'writes', withdrawnBecause: 'the run was cancelled' },
      ]);
    });
  });
});

describe('runs and prompts', () => {
  it('takes each run’s prompt from the stored messages, keeping runs in message order', () => {
    const messages = [userMessage(1, 'run-a', 'first'), { ...userMessage(2, 'run-a', 'ignored'), role: 'assistant' as const }, userMessage(3, 'run-b', 'second')];
    const loaded = withPrompts(EMPTY_CONVERSATION, messages);
    expect(loaded.runs.map((run) => [run.executionId, run.prompt])).toEqual([
      ['run-a', 'first'],
      ['run-b', 'second'],
    ]);
    const event: WsEvent = { type: 'content_delta', sessionId: 7, data: { executionId: 'run-b', delta: 'hi' }, timestamp: 0, seq: 1 };
    expect(applyEvent(loaded, event).runs.map((run) => run.items.length)).toEqual([0, 1]);
  });

  it('shows a run the console started before its first event, once', () => {
    const started = startRun(EMPTY_CONVERSATION, RUN, 'Do it');
    expect(startRun(started, RUN, 'Do it')).toBe(started);
    const withEvents = fold(stream(['content_delta', { delta: 'Doing it.' }]), started);
    expect(withEvents.runs).toEqual([expect.objectContaining({ executionId: RUN, prompt: 'Do it', items: [expect.objectContaining({ text: 'Doing it.' })] })]);
  });

  it('marks runs that never ended as interrupted; a later end still wins', () => {
    const running = fold(stream(['content_delta', { delta: 'Half' }]));
    const interrupted = markInterrupted(running);
    expect(interrupted.runs[0].state).toBe('interrupted');
    const ended = applyEvent(interrupted, { type: 'message_end', sessionId: 7, data: { executionId: RUN }, timestamp: 0, seq: 2 });
    expect(ended.runs[0].state).toBe('finished');
    expect(markInterrupted(ended)).toBe(ended);
  });
});
