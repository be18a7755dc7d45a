import { BackgroundTaskManager } from './background-task-manager';

/** A job that ends when its stop is aborted, answering with the reason. */
function stoppableJob(): { work: Promise<string>; stop: AbortController } {
  const stop = new AbortController();
  const work = new Promise<string>((resolve) => stop.signal.addEventListener('abort', () => resolve(`stopped: ${String((stop.signal.reason as Error).message)}`)));
  return { work, stop };
}

describe('BackgroundTaskManager', () => {
  it('hands out each finished job once, per session', async () => {
    const manager = new BackgroundTaskManager();
    manager.start(1, 'shell: make', Promise.resolve('made'));
    manager.start(2, 'shell: other', Promise.reject(new Error('no such file')));
    await new Promise((resolve) => setImmediate(resolve));
    expect(manager.drainCompleted(1).map((task) => task.result)).toEqual(['made']);
    expect(manager.drainCompleted(1)).toEqual([]);
    expect(manager.drainCompleted(2).map((task) => task.result)).toEqual(['{"error":"no such file"}']);
  });

  it('stops every job that can be stopped and resolves once they have ended', async () => {
    const manager = new BackgroundTaskManager();
    const first = stoppableJob();
    const second = stoppableJob();
    manager.start(1, 'shell: serve', first.work, first.stop);
    manager.start(2, 'shell: watch', second.work, second.stop);
    expect(manager.runningCount(1)).toBe(1);

    expect(await manager.stopAll('the server is shutting down')).toBe(2);
    expect(first.stop.signal.aborted && second.stop.signal.aborted).toBe(true);
    expect(manager.runningCount(1) + manager.runningCount(2)).toBe(0);
    expect(manager.drainCompleted(1).map((task) => task.result)).toEqual(['stopped: the server is shutting down']);
  });

  it('waits no longer than its deadline for a job that cannot be stopped', async () => {
    const manager = new BackgroundTaskManager();
    manager.start(1, 'desktop: shell', new Promise<string>(() => undefined));
    const started = Date.now();
    expect(await manager.stopAll('stopping', 50)).toBe(1);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('drops the result of a job of a forgotten session', async () => {
    const manager = new BackgroundTaskManager();
    const job = stoppableJob();
    manager.start(1, 'shell: serve', job.work, job.stop);
    manager.forgetSession(1);
    job.stop.abort(new Error('late'));
    await job.work;
    await new Promise((resolve) => setImmediate(resolve));
    expect(manager.drainCompleted(1)).toEqual([]);
  });
});
