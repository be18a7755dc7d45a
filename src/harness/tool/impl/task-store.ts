/** A todo item of a session's task list, kept on the server. */
export interface TaskItem {
  id: number;
  sessionId: number;
  title: string;
  description: string;
  status: TaskStatus;
  createdAt: string;
  updatedAt: string;
}

export type TaskStatus = 'pending' | 'in_progress' | 'completed' | 'cancelled';

export const TASK_STATUSES: readonly TaskStatus[] = ['pending', 'in_progress', 'completed', 'cancelled'];

/** Where the task tools keep a session's todo list (in memory for tests, SQLite in the server). */
export interface TaskStore {
  create(sessionId: number, input: { title: string; description?: string; status?: TaskStatus }): TaskItem;
  /** `undefined` when the session has no task with that id. */
  update(
    sessionId: number,
    taskId: number,
    changes: { title?: string; description?: string; status?: TaskStatus },
  ): TaskItem | undefined;
  list(sessionId: number): TaskItem[];
  /** `false` when the session has no task with that id. */
  delete(sessionId: number, taskId: number): boolean;
}
