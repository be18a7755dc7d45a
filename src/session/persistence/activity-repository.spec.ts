import type { ActivityRecorder } from '../ws/ws-streaming-event-listener';
import { ActivityRepository, type RecordActivityInput } from './activity-repository';
import { HarnessDatabase } from './harness-database';
import { InvalidRecordError } from './persistence-errors';
import { SessionRepository } from './session-repository';

describe('ActivityRepository', () => {
  let database: HarnessDatabase;
  let activities: ActivityRepository;
  let sessionId: number;

  function activityInput(overrides: Partial<RecordActivityInput> = {}): RecordActivityInput {
    return {
      sessionId,
      executionId: 'exec-1',
      toolCallId: 'call_1',
      toolName: 'read_file',
      type: 'file_read',
      target: 'a.txt',
      summary: 'Read a.txt',
      status: 'SUCCESS',
      ...overrides,
    };
  }

  beforeEach(() => {
    database = new HarnessDatabase(':memory:', { now: () => new Date(Date.UTC(2024, 5, 1)) });
    activities = new ActivityRepository(database);
    sessionId = new SessionRepository(database).create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'w' }).id;
  });

  afterEach(() => database.close());

  describe('record', () => {
    it('stores an activity and answers the record', () => {
      const record = activities.record(activityInput({ metadata: { durationMs: 12, errorMessage: null, nested: { a: [1, 'two'] } } }));
      expect(record).toEqual({
        id: expect.any(Number),
        sessionId,
        executionId: 'exec-1',
        toolCallId: 'call_1',
        toolName: 'read_file',
        type: 'file_read',
        target: 'a.txt',
        summary: 'Read a.txt',
        status: 'SUCCESS',
        metadata: { durationMs: 12, errorMessage: null, nested: { a: [1, 'two'] } },
        createdAt: '2024-06-01T00:00:00.000Z',
      });
      expect(activities.listBySession(sessionId)).toEqual([record]);
    });

    it('keeps the attachment references the listener passes in metadata', () => {
      const attachments = [{ id: 'att_AAAAAAAAAAAAAAAAAAAAAA', mediaType: 'image/png', bytes: 12, name: 'shot.png' }];
      activities.record(activityInput({ metadata: { durationMs: 3, attachments } }));
      expect(activities.listBySession(sessionId)[0].metadata).toEqual({ durationMs: 3, attachments });
    });

    it('serves as the WebSocket listener’s recorder', () => {
      const recorder: ActivityRecorder = activities;
      const { id } = recorder.record({ ...activityInput({ status: 'ERROR' }), executionId: 'exec-9', metadata: {} });
      expect(activities.listBySession(sessionId)).toEqual([expect.objectContaining({ id, executionId: 'exec-9', status: 'ERROR', metadata: {} })]);
    });

    it('defaults a missing execution id to null and missing metadata to {}', () => {
      const record = activities.record(activityInput({ executionId: undefined }));
      expect(record).toMatchObject({ executionId: null, metadata: {} });
    });

    it.each([
      ['a cycle', () => {
        const cyclic: Record<string, unknown> = {};
        cyclic.self = cyclic;
        return cyclic;
      }],
      ['a BigInt', () => ({ size: BigInt(1) })],
      ['an array', () => [1, 2] as unknown as Record<string, unknown>],
      ['a toJSON that answers a string', () => ({ toJSON: () => 'text' })],
      ['a toJSON that answers undefined', () => ({ toJSON: () => undefined })],
    ])('keeps the activity when its metadata holds %s, storing {}', (_label, metadata) => {
      const record = activities.record(activityInput({ metadata: metadata() }));
      expect(record.metadata).toEqual({});
      expect(activities.listBySession(sessionId)).toEqual([record]);
    });

    it('keeps text of any shape exactly', () => {
      const summary = 'Ran `ls`\n😀 "quoted" \u0000 end';
      const record = activities.record(activityInput({ summary, target: 'dir/ä b.txt' }));
      expect(activities.listBySession(sessionId)[0]).toMatchObject({ summary, target: 'dir/ä b.txt' });
      expect(record.summary).toBe(summary);
    });

    it('refuses a status other than SUCCESS or ERROR', () => {
      expect(() => activities.record(activityInput({ status: 'success' as never }))).toThrow(InvalidRecordError);
      expect(activities.listBySession(sessionId)).toEqual([]);
    });

    it('refuses an activity of a session that does not exist', () => {
      expect(() => activities.record(activityInput({ sessionId: 999 }))).toThrow(/FOREIGN KEY/);
    });
  });

  describe('listBySession', () => {
    it('lists only the session’s activities, in the order recorded', () => {
      const otherId = new SessionRepository(database).create({ userId: 2, executionMode: 'LOCAL', permissionLevel: 'SMART', workspace: 'o' }).id;
      activities.record(activityInput({ toolCallId: 'a' }));
      activities.record(activityInput({ sessionId: otherId, toolCallId: 'x' }));
      activities.record(activityInput({ toolCallId: 'b', status: 'ERROR' }));
      expect(activities.listBySession(sessionId).map((record) => [record.toolCallId, record.status])).toEqual([
        ['a', 'SUCCESS'],
        ['b', 'ERROR'],
      ]);
      expect(activities.listBySession(otherId).map((record) => record.toolCallId)).toEqual(['x']);
    });

    it('reads damaged metadata as {}', () => {
      const record = activities.record(activityInput({ metadata: { durationMs: 3 } }));
      database.connection.prepare("UPDATE activities SET metadata = '[1' WHERE id = ?").run(record.id);
      expect(activities.listBySession(sessionId)[0].metadata).toEqual({});
    });
  });
});
