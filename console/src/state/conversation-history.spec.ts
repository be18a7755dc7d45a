import type { Activity, StoredMessage } from '../api/wire';
import { EMPTY_CONVERSATION } from './conversation';
import { applyEvent, withPrompts } from './conversation-events';
import { fillFromMessages } from './conversation-history';

const AT = '2026-01-01T10:00:00.000Z';

function message(id: number, executionId: string, fields: Partial<StoredMessage>): StoredMessage {
  return { id, role: 'assistant', executionId, content: null, createdAt: AT, ...fields };
}

function activity(toolCallId: string, status: Activity['status'], durationMs: number): Activity {
  return { id: 1, toolCallId, toolName: 'read_file', type: 'file_read', target: 'a.txt', summary: `summary of ${toolCallId}`, status, durationMs, createdAt: AT };
}

const OLD_RUN: StoredMessage[] = [
  message(1, 'old', { role: 'user', content: 'Read a and b.' }),
  message(2, 'old', {
    content: 'Reading.',
    toolCalls: [
      { id: 'c1', function: { name: 'read_file', arguments: '{"path":"a"}' } },
      { id: 'c2', function: { name: 'read_file', arguments: '{"path":"b"}' } },
    ],
  }),
  message(3, 'old', { role: 'tool', toolCallId: 'c1', content: 'alpha', attachments: [{ id: 'att', mediaType: 'image/png', bytes: 3 }] }),
  message(4, 'old', { role: 'tool', toolCallId: 'c2', content: '{"error":"no such file"}' }),
  message(5, 'old', { content: 'Done.' }),
];

describe('fillFromMessages', () => {
  it('rebuilds a run the event log does not hold from the stored conversation and the recorded activities', () => {
    const conversation = fillFromMessages(withPrompts(EMPTY_CONVERSATION, OLD_RUN), OLD_RUN, [activity('c1', 'SUCCESS', 12), activity('c2', 'ERROR', 3)], null);
    const [run] = conversation.runs;
    expect(run).toEqual(expect.objectContaining({ executionId: 'old', prompt: 'Read a and b.', state: 'finished', cancelled: false }));
    expect(run.items.map((item) => (item.kind === 'tool' ? [item.call.callId, item.call.status, item.call.result, item.call.summary, item.call.attachments.length] : [item.kind, 'text' in item ? item.text : '']))).toEqual([
      ['text', 'Reading.'],
      ['c1', 'success', 'alpha', 'summary of c1', 1],
      ['c2', 'error', '{"error":"no such file"}', 'summary of c2', 0],
      ['text', 'Done.'],
    ]);
  });

  it('leaves alone runs the log holds, and the run that is going', () => {
    const messages = [...OLD_RUN, message(6, 'new', { role: 'user', content: 'Go on.' })];
    const logged = applyEvent(withPrompts(EMPTY_CONVERSATION, messages), { type: 'content_delta', sessionId: 1, data: { executionId: 'old', delta: 'Streamed.' }, timestamp: 0, seq: 1 });
    const filled = fillFromMessages(logged, messages, [], 'new');
    expect(filled).toBe(logged);
    expect(filled.runs.map((run) => [run.executionId, run.state, run.items.length])).toEqual([
      ['old', 'running', 1],
      ['new', 'running', 0],
    ]);
  });
});
