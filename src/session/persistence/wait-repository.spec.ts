import type { StoredWait } from '../../harness/runtime/wait-store';
import { HarnessDatabase } from './harness-database';
import { RunRepository } from './run-repository';
import { SessionRepository } from './session-repository';
import { WaitRepository } from './wait-repository';

function wait(overrides: Partial<StoredWait> = {}): StoredWait {
  return {
    requestId: 'req-1',
    kind: 'approval',
    sessionId: 1,
    executionId: 'run-1',
    toolCallId: 'call_1',
    toolName: 'shell',
    argumentsJson: '{"command":"ls"}',
    ownerUserId: 7,
    eventType: 'approval_request',
    eventData: { requestId: 'req-1', toolName: 'shell', reason: 'Shell commands need approval at READ_WRITE' },
    createdAt: 1_000,
    expiresAt: 61_000,
    ...overrides,
  };
}

describe('WaitRepository', () => {
  let database: HarnessDatabase;
  let runs: RunRepository;
  let waits: WaitRepository;
  const warnings: string[] = [];

  beforeEach(() => {
    database = new HarnessDatabase(':memory:');
    const session = new SessionRepository(database).create({ userId: 7, executionMode: 'CLOUD', permissionLevel: 'READ_WRITE', workspace: 'w' });
    runs = new RunRepository(database);
    runs.start('run-1', session.id);
    waits = new WaitRepository(database, { warn: (message) => warnings.push(message) });
    warnings.length = 0;
  });

  afterEach(() => database.close());

  it('keeps a wait as it was created, until it is removed', () => {
    waits.save(wait());
    expect(waits.find('req-1')).toEqual({ ...wait(), answer: null });
    expect(waits.forExecution('run-1').map((stored) => stored.requestId)).toEqual(['req-1']);
    expect(waits.forOwner(7)).toHaveLength(1);
    waits.remove('req-1');
    expect(waits.find('req-1')).toBeNull();
  });

  it('takes one answer per wait', () => {
    waits.save(wait());
    expect(waits.setAnswer('req-1', { kind: 'approval', outcome: 'approved', reason: 'r' })).toBe(true);
    expect(waits.setAnswer('req-1', { kind: 'approval', outcome: 'denied', reason: 'r' })).toBe(false);
    expect(waits.find('req-1')?.answer).toEqual({ kind: 'approval', outcome: 'approved', reason: 'r' });
    expect(waits.setAnswer('unknown', { kind: 'question', answers: [] })).toBe(false);
  });

  describe('when the server stops (keepAll)', () => {
    it('keeps the waits that end only because the process goes away, and still deletes on purpose', () => {
      waits.save(wait());
      waits.save(wait({ requestId: 'req-2', toolCallId: 'call_2' }));
      waits.keepAll();
      waits.remove('req-1');
      expect(waits.find('req-1')).not.toBeNull();
      waits.delete('req-2');
      expect(waits.find('req-2')).toBeNull();
    });
  });

  it('drops the waits of runs that ended', () => {
    waits.save(wait());
    expect(waits.dropOrphans()).toBe(0);
    runs.end('run-1', 'interrupted', 'stopped');
    expect(waits.dropOrphans()).toBe(1);
    expect(waits.forSession(1)).toEqual([]);
  });

  it('reports a write it could not make instead of throwing', () => {
    waits.save(wait({ executionId: 'no-such-run' }));
    expect(warnings).toEqual([expect.stringContaining('wait req-1 was not stored')]);
  });
});
