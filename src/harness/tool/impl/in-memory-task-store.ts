import type { TaskItem, TaskStatus, TaskStore } from './task-store';

/**
 * A `TaskStore` kept in process memory: for tests and for servers without persistence. Ids are
 * unique across sessions; items are copied in and out so callers cannot change stored state.
 */
export class InMemoryTaskStore implements TaskStore {
  private nextId = 1;
  private readonly tasks = new Map<number, TaskItem[]>();

  /** @param now clock for `createdAt` / `updatedAt`; injectable so tests can fix time. */
  constructor(private readonly now: () => Date = () => new Date()) {}

  create(sessionId: number, input: { title: string; description?: string; status?: TaskStatus }): TaskItem {
    const timestamp = this.now().toISOString();
    const item: TaskItem = {
      id: this.nextId++,
      sessionId,
      title: input.title,
      description: input.description ?? '',
      status: input.status ?? 'pending',
      createdAt: timestamp,
      updatedAt: timestamp,
    };
    const list = this.tasks.get(sessionId) ?? [];
    list.push(item);
    this.tasks.set(sessionId, list);
    return { ...item };
  }

  update(
    sessionId: number,
    taskId: number,
    changes: { title?: string; description?: string; status?: TaskStatus },
  ): TaskItem | undefined {
    const item = this.tasks.get(sessionId)?.find((task) => task.id === taskId);
    if (!item) return undefined;
    if (changes.title !== undefined) item.title = changes.title;
    if (changes.description !== undefined) item.description = changes.description;
    if (changes.status !== undefined) item.status = changes.status;
    item.updatedAt = this.now().toISOString();
    return { ...item };
  }

  list(sessionId: number): TaskItem[] {
    return (this.tasks.get(sessionId) ?? []).map((task) => ({ ...task }));
  }

  delete(sessionId: number, taskId: number): boolean {
    const list = this.tasks.get(sessionId);
    const index = list?.findIndex((task) => task.id === taskId) ?? -1;
    if (!list || index === -1) return false;
    list.splice(index, 1);
    return true;
  }
}
