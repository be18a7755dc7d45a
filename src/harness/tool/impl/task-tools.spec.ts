import { InMemoryTaskStore } from './in-memory-task-store';
import { TaskCreateTool } from './task-create-tool';
import { TaskDeleteTool } from './task-delete-tool';
import { TaskListTool } from './task-list-tool';
import type { TaskItem, TaskStore } from './task-store';
import { TaskUpdateTool } from './task-update-tool';
import { failureMessage, successJson } from './testing/tool-return';

const SESSION = 3;
const OTHER_SESSION = 4;
const WORKSPACE = '/unused';

describe('task tools', () => {
  let clock: number;
  let store: InMemoryTaskStore;

  beforeEach(() => {
    clock = Date.UTC(2025, 0, 1);
    store = new InMemoryTaskStore(() => new Date(clock));
  });

  const create = (args: Record<string, unknown>, session = SESSION) => new TaskCreateTool(store).execute(JSON.stringify(args), session, WORKSPACE);
  const update = (args: Record<string, unknown>) => new TaskUpdateTool(store).execute(JSON.stringify(args), SESSION, WORKSPACE);
  const remove = (args: Record<string, unknown>) => new TaskDeleteTool(store).execute(JSON.stringify(args), SESSION, WORKSPACE);
  /** The session's tasks, from a `task_list` call that succeeded. */
  const tasks = async (session = SESSION) => successJson(await new TaskListTool(store).execute('{}', session, WORKSPACE)).tasks as TaskItem[];

  describe('task_create', () => {
    it('creates a pending task with an id and timestamps', async () => {
      expect(successJson(await create({ title: 'write docs' }))).toEqual({
        task: {
          id: 1,
          sessionId: SESSION,
          title: 'write docs',
          description: '',
          status: 'pending',
          createdAt: '2025-01-01T00:00:00.000Z',
          updatedAt: '2025-01-01T00:00:00.000Z',
        },
      });
    });

    it('takes a description and a status', async () => {
      expect(successJson(await create({ title: 't', description: 'd', status: 'in_progress' })).task).toEqual(
        expect.objectContaining({ description: 'd', status: 'in_progress' }),
      );
    });

    it('refuses an invalid status, naming it and the valid ones', async () => {
      expect(failureMessage(await create({ title: 't', status: 'done' }))).toBe(
        "invalid status 'done'; expected one of pending, in_progress, completed, cancelled",
      );
      expect(await tasks()).toEqual([]);
    });

    it('works with the 4-argument form and needs a session', async () => {
      const tool = new TaskCreateTool(store);
      expect(successJson(await tool.execute('{"title":"t"}', SESSION, 1, null))).toHaveProperty('task');
      expect(failureMessage(await tool.execute('{"title":"t"}', null, 1, WORKSPACE))).toBe('task_create needs a session to run');
      expect(failureMessage(await tool.execute('{"title":"t"}', WORKSPACE))).toBe('task_create needs a session to run');
    });
  });

  describe('task_list', () => {
    it("lists only the calling session's tasks, oldest first", async () => {
      await create({ title: 'first' });
      await create({ title: 'elsewhere' }, OTHER_SESSION);
      await create({ title: 'second' });
      expect((await tasks()).map((task) => task.title)).toEqual(['first', 'second']);
      expect((await tasks(OTHER_SESSION)).map((task) => task.title)).toEqual(['elsewhere']);
    });
  });

  describe('task_update', () => {
    it('changes the given fields and the update time', async () => {
      await create({ title: 'draft' });
      clock += 60_000;
      expect(successJson(await update({ task_id: 1, status: 'completed', title: 'final' })).task).toEqual(
        expect.objectContaining({ id: 1, title: 'final', description: '', status: 'completed', updatedAt: '2025-01-01T00:01:00.000Z' }),
      );
    });

    it.each([
      [{ task_id: 99, status: 'completed' }, 'no task with id 99 in this session'],
      [{ task_id: 1 }, 'nothing to update; give at least one of title, description, status'],
      [{ task_id: 1, status: 'finished' }, "invalid status 'finished'; expected one of pending, in_progress, completed, cancelled"],
      [{ task_id: 1, title: '' }, "'title' must not be empty"],
      [{ task_id: '1', status: 'completed' }, "'task_id' must be an integer, got string"],
    ])('%j → error', async (args, error) => {
      await create({ title: 'draft' });
      expect(failureMessage(await update(args))).toBe(error);
    });

    it("cannot change another session's task", async () => {
      await create({ title: 'theirs' }, OTHER_SESSION);
      expect(failureMessage(await update({ task_id: 1, status: 'cancelled' }))).toBe('no task with id 1 in this session');
      expect((await tasks(OTHER_SESSION))[0].status).toBe('pending');
    });
  });

  describe('task_delete', () => {
    it('removes the task', async () => {
      await create({ title: 'a' });
      await create({ title: 'b' });
      expect(successJson(await remove({ task_id: 1 }))).toEqual({ deleted: 1 });
      expect((await tasks()).map((task) => task.id)).toEqual([2]);
    });

    it('names an unknown id', async () => {
      expect(failureMessage(await remove({ task_id: 7 }))).toBe('no task with id 7 in this session');
    });
  });

  it('turns a failing store into an error result', async () => {
    const failing: TaskStore = {
      ...store,
      create: () => {
        throw new Error('database is locked');
      },
      update: () => undefined,
      list: () => [],
      delete: () => false,
    };
    expect(failureMessage(await new TaskCreateTool(failing).execute('{"title":"t"}', SESSION, WORKSPACE))).toBe('task_create failed: database is locked');
  });
});

describe('InMemoryTaskStore', () => {
  it('hands out copies, so callers cannot change stored tasks', () => {
    const store = new InMemoryTaskStore();
    const created = store.create(1, { title: 'original' });
    created.title = 'changed';
    store.list(1)[0].status = 'completed';
    expect(store.list(1)[0]).toEqual(expect.objectContaining({ title: 'original', status: 'pending' }));
  });

  it('keeps ids unique across sessions and scopes update and delete to the session', () => {
    const store = new InMemoryTaskStore();
    expect(store.create(1, { title: 'a' }).id).toBe(1);
    expect(store.create(2, { title: 'b' }).id).toBe(2);
    expect(store.update(1, 2, { title: 'x' })).toBeUndefined();
    expect(store.delete(1, 2)).toBe(false);
    expect(store.delete(2, 2)).toBe(true);
    expect(store.list(2)).toEqual([]);
  });
});
