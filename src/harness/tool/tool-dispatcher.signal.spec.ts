import { getEventListeners } from 'node:events';
import { openCallCount } from './call-signal';
import { BaseTool } from './tool';
import { ToolCallContext, type ToolCallProgress } from './tool-call-context';
import { ToolDispatcher } from './tool-dispatcher';
import type { ToolInvocation } from './tool-invocation';
import { ToolRegistry } from './tool-registry';

/** A tool that waits until its call's signal fires (or forever, when it ignores it), reporting progress. */
class WaitingTool extends BaseTool {
  runs = 0;
  seenSignal: AbortSignal | undefined;
  constructor(private readonly honoursSignal: boolean) {
    super();
  }
  getName(): string {
    return 'wait';
  }
  getDescription(): string {
    return 'waits';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  override execute(): Promise<string> {
    this.runs++;
    this.seenSignal = ToolCallContext.signal();
    ToolCallContext.reportProgress({ progress: 1, total: 2, message: 'half way' });
    return new Promise((resolve) => {
      if (this.honoursSignal) this.seenSignal?.addEventListener('abort', () => resolve('stopped'), { once: true });
    });
  }
}

/** A tool that answers at once. */
class AnsweringTool extends BaseTool {
  getName(): string {
    return 'answer';
  }
  getDescription(): string {
    return 'answers';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  override execute(): Promise<string> {
    return Promise.resolve('ok');
  }
}

/** A tool that answers as it is called (no promise), or throws, reading its call's signal. */
class SyncTool extends BaseTool {
  seenSignal: AbortSignal | undefined;
  constructor(private readonly answer: () => string) {
    super();
  }
  getName(): string {
    return 'sync';
  }
  getDescription(): string {
    return 'answers synchronously';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  override execute(): string {
    this.seenSignal = ToolCallContext.signal();
    return this.answer();
  }
}

/** A tool that answers through a thenable that is not a native promise. */
class ThenableTool extends BaseTool {
  getName(): string {
    return 'thenable';
  }
  getDescription(): string {
    return 'answers through a thenable';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  override execute(): Promise<string> {
    const thenable = { then: (resolve: (value: string) => void) => setImmediate(() => resolve('from a thenable')) };
    return thenable as unknown as Promise<string>;
  }
}

function invocation(overrides: Partial<ToolInvocation> = {}): ToolInvocation {
  return {
    callId: 'c1',
    toolName: 'wait',
    argumentsJson: '{}',
    executionMode: 'CLOUD',
    sessionId: 1,
    userId: 1,
    executionUserId: null,
    workspace: '/ws',
    permissionLevel: 'FULL',
    modelConfig: null,
    sessionTools: null,
    ...overrides,
  };
}

describe('ToolDispatcher and the call signal', () => {
  it("hands the run's signal and a progress sink to the tool, and answers a cancelled call at once", async () => {
    const tool = new WaitingTool(true);
    const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([tool]) });
    const controller = new AbortController();
    const progress: ToolCallProgress[] = [];

    const pending = dispatcher.dispatchInvocation(invocation({ signal: controller.signal, onProgress: (p) => progress.push(p) }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(tool.seenSignal?.aborted).toBe(false);
    expect(progress).toEqual([{ progress: 1, total: 2, message: 'half way' }]);
    controller.abort(new Error('The run was cancelled'));
    const result = await pending;

    expect(tool.seenSignal?.aborted).toBe(true);
    expect(result).toEqual({
      callId: 'c1',
      status: 'error',
      content: 'Tool execution failed: the run was cancelled before the tool finished',
      errorMessage: 'the run was cancelled before the tool finished',
      durationMs: expect.any(Number),
    });
  });

  it('does not wait for a tool that ignores its signal', async () => {
    const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([new WaitingTool(false)]) });
    const controller = new AbortController();
    const pending = dispatcher.dispatchInvocation(invocation({ signal: controller.signal }));
    controller.abort();
    expect((await pending).status).toBe('error');
  });

  it('runs nothing for a call whose run was cancelled before it started', async () => {
    const tool = new WaitingTool(true);
    const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([tool]) });
    const controller = new AbortController();
    controller.abort();
    expect((await dispatcher.dispatchInvocation(invocation({ signal: controller.signal }))).status).toBe('error');
    expect(tool.runs).toBe(0);
  });

  it('stops a call at the dispatcher-wide deadline, naming it', async () => {
    const tool = new WaitingTool(true);
    const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([tool]), callTimeoutMs: 20 });
    const result = await dispatcher.dispatchInvocation(invocation());
    expect(result.errorMessage).toBe('the tool did not finish within 20 ms');
    expect(tool.seenSignal?.aborted).toBe(true);
  });

  it('without a signal, progress sink or deadline, runs the tool outside any call scope, as before', async () => {
    const tool = new WaitingTool(true);
    const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([tool]) });
    void dispatcher.dispatchInvocation(invocation());
    await new Promise((resolve) => setImmediate(resolve));
    expect(tool.runs).toBe(1);
    expect(tool.seenSignal).toBeUndefined();
  });

  describe('when many calls of a run are in flight', () => {
    it("cancels every one of them, through one listener on the run's signal", async () => {
      const tools = new WaitingTool(true);
      const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([tools]), callTimeoutMs: 3_600_000 });
      const controller = new AbortController();
      const pending = Array.from({ length: 3_200 }, (_, i) => dispatcher.dispatchInvocation(invocation({ callId: `c${i}`, signal: controller.signal })));
      await new Promise((resolve) => setImmediate(resolve));
      expect(tools.runs).toBe(3_200);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);

      controller.abort(new Error('The run was cancelled'));
      const results = await Promise.all(pending);

      expect(results.every((result) => result.errorMessage === 'the run was cancelled before the tool finished')).toBe(true);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      expect(openCallCount(controller.signal)).toBe(0);
    });

    it("leaves nothing on the run's signal, and no deadline running, once they have finished", async () => {
      jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
      try {
        const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([new AnsweringTool()]), callTimeoutMs: 3_600_000 });
        const controller = new AbortController();
        const results = await Promise.all(
          Array.from({ length: 100 }, (_, i) => dispatcher.dispatchInvocation(invocation({ callId: `c${i}`, toolName: 'answer', signal: controller.signal }))),
        );
        expect(results.every((result) => result.status === 'success')).toBe(true);
        expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
        expect(openCallCount(controller.signal)).toBe(0);
        expect(jest.getTimerCount()).toBe(0);
      } finally {
        jest.useRealTimers();
      }
    });

    it('hands each call a signal of its own, which the deadline of one fires alone', async () => {
      const tool = new WaitingTool(true);
      const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([tool]), callTimeoutMs: 20 });
      const controller = new AbortController();
      const result = await dispatcher.dispatchInvocation(invocation({ signal: controller.signal }));
      expect(result.errorMessage).toBe('the tool did not finish within 20 ms');
      expect(tool.seenSignal?.aborted).toBe(true);
      expect((tool.seenSignal?.reason as DOMException).name).toBe('TimeoutError');
      expect(controller.signal.aborted).toBe(false);
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    });
  });

  describe('for a tool that answers as it is called', () => {
    it('keeps its answer though the run is cancelled the moment the call was made, and leaves nothing on the signal', async () => {
      const tool = new SyncTool(() => 'done already');
      const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([tool]), callTimeoutMs: 60_000 });
      const run = new AbortController();
      const pending = dispatcher.dispatchInvocation(invocation({ toolName: 'sync', signal: run.signal }));
      run.abort();
      const result = await pending;
      expect(result).toMatchObject({ callId: 'c1', status: 'success', content: 'done already' });
      expect(tool.seenSignal).toBeDefined();
      expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
      expect(openCallCount(run.signal)).toBe(0);
    });

    it('answers one that throws with an error result naming what it threw', async () => {
      const tool = new SyncTool(() => {
        throw new Error('broken on the spot');
      });
      const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([tool]), callTimeoutMs: 60_000 });
      const result = await dispatcher.dispatchInvocation(invocation({ toolName: 'sync', signal: new AbortController().signal }));
      expect(result).toMatchObject({ status: 'error', content: 'Tool execution failed: broken on the spot', errorMessage: 'broken on the spot' });
      // The legacy entry throws it again, as it always did.
      await expect(dispatcher.dispatch('sync', '{}')).rejects.toThrow('broken on the spot');
    });
  });

  it('waits for a tool that answers through a thenable which is not a native promise', async () => {
    const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([new ThenableTool()]), callTimeoutMs: 60_000 });
    const result = await dispatcher.dispatchInvocation(invocation({ toolName: 'thenable', signal: new AbortController().signal }));
    expect(result).toMatchObject({ status: 'success', content: 'from a thenable' });
  });
});
