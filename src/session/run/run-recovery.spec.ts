import type { ToolCall } from '../../harness/llm/chat-request';
import { ActivityRepository } from '../persistence/activity-repository';
import { HarnessDatabase } from '../persistence/harness-database';
import { MessageRepository } from '../persistence/message-repository';
import { RunRepository } from '../persistence/run-repository';
import { SessionRepository } from '../persistence/session-repository';
import { WaitRepository } from '../persistence/wait-repository';
import { INTERRUPTED_RUN_REASON, INTERRUPTED_TOOL_RESULT, RunRecovery } from './run-recovery';

function call(id: string, name: string, args: Record<string, unknown>): ToolCall {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

describe('RunRecovery', () => {
  let database: HarnessDatabase;
  let runs: RunRepository;
  let messages: MessageRepository;
  let activities: ActivityRepository;
  let sessionId: number;

  beforeEach(() => {
    database = new HarnessDatabase(':memory:');
    runs = new RunRepository(database);
    messages = new MessageRepository(database);
    activities = new ActivityRepository(database);
    sessionId = new SessionRepository(database).create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'w' }).id;
  });
  afterEach(() => database.close());

  const recover = () => new RunRecovery({ database, runs, messages, activities }).recoverAll();

  it('closes the last round of an unfinished run: staged results in call order, an error for the rest, an activity each', () => {
    runs.start('e1', sessionId);
    messages.append(sessionId, 'e1', { role: 'user', content: 'do three things' });
    messages.append(sessionId, 'e1', {
      role: 'assistant',
      content: null,
      tool_calls: [call('a', 'read_file', { path: 'a.txt' }), call('b', 'write_file', { path: 'b.txt', content: 'x' }), call('c', 'shell', { command: 'make' })],
    });
    // `b` finished first, then `a`, which was streamed (first in call order) and audited; the
    // process died while `c` ran.
    messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'b', content: 'Wrote 1 bytes to b.txt' });
    messages.stageToolResult('e1', { role: 'tool', tool_call_id: 'a', content: '{"error":"no such file"}', is_error: true });
    activities.record({ sessionId, executionId: 'e1', toolCallId: 'a', toolName: 'read_file', type: 'file_read', target: 'a.txt', summary: 'a.txt not found', status: 'ERROR' });

    expect(recover()).toEqual([{ executionId: 'e1', sessionId, unansweredCalls: ['c'], finishedCalls: ['a', 'b'] }]);

    const tool = messages.listBySession(sessionId).filter((m) => m.role === 'tool');
    expect(tool.map((m) => [m.toolCallId, m.content, m.isError ?? false])).toEqual([
      ['a', '{"error":"no such file"}', true],
      ['b', 'Wrote 1 bytes to b.txt', false],
      ['c', INTERRUPTED_TOOL_RESULT, true],
    ]);
    expect(messages.stagedToolResults('e1').size).toBe(0);
    expect(activities.listBySession(sessionId).map((a) => [a.toolCallId, a.status, a.target])).toEqual([
      ['a', 'ERROR', 'a.txt'],
      ['b', 'SUCCESS', 'b.txt'],
      ['c', 'ERROR', 'make'],
    ]);
    expect(runs.find('e1')).toEqual(expect.objectContaining({ status: 'interrupted', error: INTERRUPTED_RUN_REASON, endedAt: expect.any(String) }));
  });

  it('marks a run that died before the model answered as interrupted, writing nothing else', () => {
    runs.start('e2', sessionId);
    messages.append(sessionId, 'e2', { role: 'user', content: 'hello?' });

    expect(recover()).toEqual([{ executionId: 'e2', sessionId, unansweredCalls: [], finishedCalls: [] }]);
    expect(messages.listBySession(sessionId)).toHaveLength(1);
    expect(runs.find('e2')?.status).toBe('interrupted');
  });

  it('leaves runs that ended alone, and a second start finds nothing to do', () => {
    runs.start('done', sessionId);
    runs.end('done', 'completed');
    runs.start('cut', sessionId);

    expect(recover().map((r) => r.executionId)).toEqual(['cut']);
    expect(recover()).toEqual([]);
    expect(runs.find('done')?.status).toBe('completed');
  });

  describe('when the run holds stored waits', () => {
    let waits: WaitRepository;
    const NOW = 1_000_000;
    const recoverWaiting = () => new RunRecovery({ database, runs, messages, activities, waits, now: () => NOW }).recoverAll();
    const storeWait = (requestId: string, toolCallId: string, expiresAt: number) =>
      waits.save({
        requestId,
        kind: 'approval',
        sessionId,
        executionId: 'w1',
        toolCallId,
        toolName: 'shell',
        argumentsJson: '{"command":"make"}',
        ownerUserId: 1,
        eventType: 'approval_request',
        eventData: { requestId, reason: 'Shell commands need approval at READ_WRITE' },
        createdAt: NOW - 60_000,
        expiresAt,
      });

    beforeEach(() => {
      waits = new WaitRepository(database);
      runs.start('w1', sessionId);
      messages.append(sessionId, 'w1', { role: 'user', content: 'build it' });
      messages.append(sessionId, 'w1', {
        role: 'assistant',
        content: null,
        tool_calls: [call('a', 'write_file', { path: 'a.txt', content: 'x' }), call('b', 'shell', { command: 'make' }), call('c', 'read_file', { path: 'a.txt' })],
      });
      messages.stageToolResult('w1', { role: 'tool', tool_call_id: 'a', content: 'Wrote 1 bytes to a.txt' });
    });

    it('leaves the run waiting, its round open, and the unfinished calls without a result for the resume to settle', () => {
      storeWait('req-b', 'b', NOW + 1);

      expect(recoverWaiting()).toEqual([{ executionId: 'w1', sessionId, unansweredCalls: [], finishedCalls: [], waiting: true, ready: false }]);
      expect(runs.find('w1')?.status).toBe('waiting');
      expect(messages.listBySession(sessionId).filter((m) => m.role === 'tool')).toEqual([]);
      // c, behind the waiting b, never started: the resumed round runs it.
      expect([...messages.stagedToolResults('w1').keys()]).toEqual(['a']);
      expect(waits.find('req-b')?.answer).toBeNull();
      expect(activities.listBySession(sessionId)).toEqual([]);
    });

    it('answers a wait that expired while the server was down with its timeout, and says the run can go on', () => {
      storeWait('req-b', 'b', NOW);

      expect(recoverWaiting()).toEqual([expect.objectContaining({ waiting: true, ready: true })]);
      expect(waits.find('req-b')?.answer).toEqual({
        kind: 'approval',
        outcome: 'expired',
        reason: 'Shell commands need approval at READ_WRITE',
        message: 'no answer within 60000 ms',
      });
    });

    it('closes the run as before when its waits name no open call, and drops them', () => {
      storeWait('req-x', 'not-in-the-round', NOW + 1);

      expect(recoverWaiting()).toEqual([{ executionId: 'w1', sessionId, unansweredCalls: ['b', 'c'], finishedCalls: ['a'] }]);
      expect(runs.find('w1')?.status).toBe('interrupted');
      expect(waits.forExecution('w1')).toEqual([]);
    });
  });
});
