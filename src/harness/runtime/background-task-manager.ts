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
  /** Stops the job's work, when its starter gave a way to (`start`'s `stop`). */
  stop: AbortController | null;
  /** Settles when the job has ended, however it ended. */
  ended: Promise<void>;
}

/**
 * Jobs that outlive the tool call that started them (e.g. `shell` with `async:true`). Their
 * results are collected per session and injected into the conversation at the next model round.
 */
export class BackgroundTaskManager {
  private nextId = 1;
  private readonly running = new Map<string, RunningTask>();
  private readonly finished = new Map<number, BackgroundTaskResult[]>();

  /**
   * Tracks `work`; a rejection becomes an `{"error":...}` result. Returns the task id. `stop`,
   * when given, is what `stopAll` aborts to end the work (a `shell` command is killed by it).
   */
  start(sessionId: number, description: string, work: Promise<string>, stop?: AbortController): string {
    const taskId = `bg-${this.nextId++}`;
    const ended = work
      .then(
        (result) => result,
        (error: unknown) => JSON.stringify({ error: errorMessage(error) }),
      )
      .then((result) => {
        if (this.running.get(taskId)?.sessionId !== sessionId) return; // the session was forgotten meanwhile
        this.running.delete(taskId);
        const list = this.finished.get(sessionId) ?? [];
        list.push({ taskId, sessionId, description, result });
        this.finished.set(sessionId, list);
      });
    this.running.set(taskId, { sessionId, description, stop: stop ?? null, ended });
    return taskId;
  }

  /**
   * Stops every running job that can be stopped — for a server that stops: a background
   * `shell` command would otherwise outlive the process that started it — and resolves once they
   * have all ended, or after `timeoutMs`. Returns how many were still running when asked.
   */
  async stopAll(reason: string, timeoutMs = 5_000): Promise<number> {
    const tasks = [...this.running.values()];
    for (const task of tasks) task.stop?.abort(new Error(reason));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
      timer.unref();
    });
    try {
      await Promise.race([Promise.all(tasks.map((task) => task.ended)), late]);
    } finally {
      clearTimeout(timer);
    }
    return tasks.length;
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
