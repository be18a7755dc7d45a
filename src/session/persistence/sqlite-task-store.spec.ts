import { HarnessDatabase } from './harness-database';
import { InvalidRecordError } from './persistence-errors';
import { SessionRepository } from './session-repository';
import { SqliteTaskStore } from './sqlite-task-store';

describe('SqliteTaskStore', () => {
  let database: HarnessDatabase;
  let store: SqliteTaskStore;
  let clock: number;
  let first: number;
  let second: number;

  beforeEach(() => {
    clock = Date.UTC(2024, 2, 3);
    database = new HarnessDatabase(':memory:', { now: () => new Date(clock) });
    store = new SqliteTaskStore(database);
    const sessions = new SessionRepository(database);
    first = sessions.create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'a' }).id;
    second = sessions.create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'b' }).id;
  });

  afterEach(() => database.close());

  describe('create', () => {
    it('creates a pending task with an empty description by default', () => {
      expect(store.create(first, { title: 'write tests' })).toEqual({
        id: expect.any(Number),
        sessionId: first,
        title: 'write tests',
        description: '',
        status: 'pending',
        createdAt: '2024-03-03T00:00:00.000Z',
        updatedAt: '2024-03-03T00:00:00.000Z',
      });
    });

    it('keeps the given description and status', () => {
      const task = store.create(first, { title: 't', description: 'line 1\nline 2 ✓', status: 'in_progress' });
      expect(store.list(first)).toEqual([task]);
      expect(task).toMatchObject({ description: 'line 1\nline 2 ✓', status: 'in_progress' });
    });

    it('refuses an unknown status', () => {
      expect(() => store.create(first, { title: 't', status: 'done' as never })).toThrow(InvalidRecordError);
      expect(store.list(first)).toEqual([]);
    });
  });

  describe('update', () => {
    it('changes only the given fields and stamps updatedAt', () => {
      const task = store.create(first, { title: 'old', description: 'keep me' });
      clock += 60_000;
      const updated = store.update(first, task.id, { status: 'completed' });
      expect(updated).toEqual({ ...task, status: 'completed', updatedAt: '2024-03-03T00:01:00.000Z' });
      expect(store.update(first, task.id, { title: 'new', description: '' })).toMatchObject({ title: 'new', description: '', status: 'completed' });
      expect(store.list(first)).toEqual([expect.objectContaining({ title: 'new', description: '', status: 'completed' })]);
    });

    it('answers undefined for an unknown id', () => {
      expect(store.update(first, 404, { title: 'x' })).toBeUndefined();
    });

    it('refuses an unknown status and keeps the task', () => {
      const task = store.create(first, { title: 't' });
      expect(() => store.update(first, task.id, { status: 'finished' as never })).toThrow(InvalidRecordError);
      expect(store.list(first)).toEqual([task]);
    });
  });

  describe('list', () => {
    it('lists a session’s tasks in creation order', () => {
      const ids = ['a', 'b', 'c'].map((title) => store.create(first, { title }).id);
      expect(store.list(first).map((task) => task.id)).toEqual(ids);
      expect(store.list(12345)).toEqual([]);
    });
  });

  describe('delete', () => {
    it('deletes a task once', () => {
      const task = store.create(first, { title: 't' });
      expect(store.delete(first, task.id)).toBe(true);
      expect(store.delete(first, task.id)).toBe(false);
      expect(store.list(first)).toEqual([]);
    });
  });

  describe('when another session names a task', () => {
    it('neither lists, updates nor deletes it', () => {
      const task = store.create(first, { title: 'mine' });
      const theirs = store.create(second, { title: 'theirs' });
      expect(store.list(second)).toEqual([theirs]);
      expect(store.update(second, task.id, { title: 'hijacked', status: 'cancelled' })).toBeUndefined();
      expect(store.delete(second, task.id)).toBe(false);
      expect(store.list(first)).toEqual([task]);
    });
  });

  it('loses a session’s tasks with the session', () => {
    store.create(first, { title: 't' });
    database.connection.prepare('DELETE FROM sessions WHERE id = ?').run(first);
    expect(store.list(first)).toEqual([]);
  });
});
