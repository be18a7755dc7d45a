import { errorMessage } from './error-message';

/** A finished background job whose result the model has not seen yet. */
export interface BackgroundTaskResult {
  taskId: string;
  sessionId: number;
  description: string;
  result: string;
}

interface RunningTask {
  sessionId: number;
  description: string;
}

/**
 * Jobs that outlive the tool call that started them (e.g. `shell` with `async:true`). Their
 * results are collected per session and injected into the conversation at the next model round.
 */
export class BackgroundTaskManager {
  private nextId = 1;
  private readonly running = new Map<string, RunningTask>();
  private readonly finished = new Map<number, BackgroundTaskResult[]>();

  /** Tracks `work`; a rejection becomes an `{"error":...}` result. Returns the task id. */
  start(sessionId: number, description: string, work: Promise<string>): string {
    const taskId = `bg-${this.nextId++}`;
    this.running.set(taskId, { sessionId, description });
    work
      .then(
        (result) => result,
        (error: unknown) => JSON.stringify({ error: errorMessage(error) }),
      )
      .then((result) => {
        if (!this.running.delete(taskId)) return; // the session was cancelled meanwhile
        const list = this.finished.get(sessionId) ?? [];
        list.push({ taskId, sessionId, description, result });
        this.finished.set(sessionId, list);
      });
    return taskId;
  }

  /** Results finished since the last call, oldest first; each is handed out once. */
  drainCompleted(sessionId: number): BackgroundTaskResult[] {
    const list = this.finished.get(sessionId) ?? [];
    this.finished.delete(sessionId);
    return list;
  }

  /** How many jobs of the session are still running. */
  runningCount(sessionId: number): number {
    let count = 0;
    for (const task of this.running.values()) if (task.sessionId === sessionId) count++;
    return count;
  }

  /** Forgets the session's jobs; results that arrive later are dropped. */
  forgetSession(sessionId: number): void {
    for (const [id, task] of this.running) if (task.sessionId === sessionId) this.running.delete(id);
    this.finished.delete(sessionId);
  }
}
