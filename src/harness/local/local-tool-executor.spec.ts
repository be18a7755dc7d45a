import { ApprovalRegistry } from './approval-registry';
import type { ClientEvent } from './client-event';
import { LocalToolExecutor } from './local-tool-executor';
import { LocalToolSessionRegistry } from './local-tool-session-registry';

const OWNER = 1;
const SESSION = 10;
const TIMEOUT_MS = 5_000;

/** The fake desktop client: records the requests it receives; the test answers them. */
function fakeDesktop() {
  const events: ClientEvent[] = [];
  return {
    events,
    send: (event: ClientEvent) => void events.push(event),
    lastRequestId: () => String(events[events.length - 1]?.data.requestId),
  };
}

function setup(options: { timeoutMs?: number } = { timeoutMs: TIMEOUT_MS }) {
  let next = 1;
  const registry = new LocalToolSessionRegistry({ newId: () => `req-${next++}` });
  const approvals = new ApprovalRegistry({ now: () => 123 });
  const executor = new LocalToolExecutor(registry, approvals, options);
  registry.bindSession(SESSION, OWNER);
  return { registry, approvals, executor };
}

describe('LocalToolExecutor', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => {
    jest.useRealTimers();
  });

  it('resolves with the client result unchanged and leaves no timer or pending request', async () => {
    const { registry, executor } = setup();
    const desktop = fakeDesktop();
    registry.addConnection('c1', OWNER, desktop.send);

    const running = executor.execute(SESSION, 'read_file', '{"path":"a.txt"}', '/ws', false, null);
    expect(desktop.events).toHaveLength(1);
    expect(desktop.events[0]).toMatchObject({
      type: 'tool_request',
      sessionId: SESSION,
      data: { toolName: 'read_file', arguments: '{"path":"a.txt"}', workspace: '/ws', needApproval: false, dangerReason: null },
    });
    expect(jest.getTimerCount()).toBe(1);

    registry.completeRequest(desktop.lastRequestId(), '  raw output, not JSON\n', OWNER);

    await expect(running).resolves.toBe('  raw output, not JSON\n');
    expect(jest.getTimerCount()).toBe(0);
    expect(registry.pendingCount()).toBe(0);
  });

  it('answers an error result when the owner has no connected client', async () => {
    const { executor } = setup();
    await expect(executor.execute(SESSION, 'shell', '{}', null, false, null)).resolves.toBe(
      JSON.stringify({ error: 'No connected desktop client for session 10' }),
    );
    expect(jest.getTimerCount()).toBe(0);
  });

  it('answers an error result when the only sink throws', async () => {
    const { registry, executor } = setup();
    registry.addConnection('c1', OWNER, () => {
      throw new Error('socket closed');
    });
    const result = JSON.parse(await executor.execute(SESSION, 'shell', '{}', null, false, null));
    expect(result).toEqual({ error: 'No connected desktop client for session 10' });
    expect(jest.getTimerCount()).toBe(0);
  });

  describe('when the client does not answer in time', () => {
    it('answers a timeout error, removes the request and clears the timer', async () => {
      const { registry, executor } = setup();
      const desktop = fakeDesktop();
      registry.addConnection('c1', OWNER, desktop.send);

      const running = executor.execute(SESSION, 'grep', '{}', null, false, null);
      jest.advanceTimersByTime(TIMEOUT_MS - 1);
      expect(registry.pendingCount()).toBe(1);
      jest.advanceTimersByTime(1);

      await expect(running).resolves.toBe(JSON.stringify({ error: "Local tool 'grep' timed out after 5000 ms" }));
      expect(registry.pendingCount()).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
      // A late answer finds nothing to complete.
      expect(registry.completeRequest(desktop.lastRequestId(), 'late', OWNER)).toBe(false);
    });

    it('waits 300000 ms by default', async () => {
      const { registry, executor } = setup({});
      registry.addConnection('c1', OWNER, fakeDesktop().send);

      const running = executor.execute(SESSION, 'grep', '{}', null, false, null);
      jest.advanceTimersByTime(299_999);
      expect(registry.pendingCount()).toBe(1);
      jest.advanceTimersByTime(1);

      await expect(running).resolves.toBe(JSON.stringify({ error: "Local tool 'grep' timed out after 300000 ms" }));
    });
  });

  describe('when the client disconnects mid-call', () => {
    it('answers a disconnection error and cleans up', async () => {
      const { registry, executor } = setup();
      registry.addConnection('c1', OWNER, fakeDesktop().send);

      const running = executor.execute(SESSION, 'shell', '{"command":"sleep 9"}', null, false, null);
      registry.removeConnection('c1');

      await expect(running).resolves.toBe(JSON.stringify({ error: "Desktop client disconnected while running 'shell'" }));
      expect(registry.pendingCount()).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('keeps the call alive while a second connection of the owner stays open', async () => {
      const { registry, executor } = setup();
      const first = fakeDesktop();
      const second = fakeDesktop();
      registry.addConnection('c1', OWNER, first.send);
      registry.addConnection('c2', OWNER, second.send);

      const running = executor.execute(SESSION, 'shell', '{}', null, false, null);
      registry.removeConnection('c1');
      expect(registry.pendingCount()).toBe(1);
      registry.completeRequest(second.lastRequestId(), '{"exit_code":0}', OWNER);

      await expect(running).resolves.toBe('{"exit_code":0}');
      expect(jest.getTimerCount()).toBe(0);
    });
  });

  it('answers the reason of a failed request as an error result', async () => {
    const { registry, executor } = setup();
    const desktop = fakeDesktop();
    registry.addConnection('c1', OWNER, desktop.send);

    const running = executor.execute(SESSION, 'shell', '{}', null, false, null);
    registry.failRequest(desktop.lastRequestId(), 'run cancelled');

    await expect(running).resolves.toBe(JSON.stringify({ error: 'run cancelled' }));
    expect(jest.getTimerCount()).toBe(0);
  });

  it('ignores an answer from another user', async () => {
    const { registry, executor } = setup();
    const desktop = fakeDesktop();
    registry.addConnection('c1', OWNER, desktop.send);

    const running = executor.execute(SESSION, 'shell', '{}', null, false, null);
    expect(registry.completeRequest(desktop.lastRequestId(), 'forged', 99)).toBe(false);
    registry.completeRequest(desktop.lastRequestId(), 'genuine', OWNER);

    await expect(running).resolves.toBe('genuine');
  });

  describe('when the call needs approval', () => {
    it('lists the request as pending approval while it waits and forgets it once answered', async () => {
      const { registry, approvals, executor } = setup();
      const desktop = fakeDesktop();
      registry.addConnection('c1', OWNER, desktop.send);

      const running = executor.execute(SESSION, 'shell', '{"command":"rm -rf build"}', '/ws', true, 'deletes files');
      const requestId = desktop.lastRequestId();
      expect(desktop.events[0].data).toMatchObject({ needApproval: true, dangerReason: 'deletes files' });
      expect(approvals.listPending(SESSION)).toEqual([
        { requestId, sessionId: SESSION, toolName: 'shell', dangerReason: 'deletes files', createdAt: 123 },
      ]);

      // The user rejected the call on the desktop.
      registry.completeRequest(requestId, '{"error":"User rejected the tool call"}', OWNER);

      await expect(running).resolves.toBe('{"error":"User rejected the tool call"}');
      expect(approvals.isPending(requestId)).toBe(false);
      expect(approvals.listPending(SESSION)).toEqual([]);
    });

    it('forgets the approval when the call times out', async () => {
      const { registry, approvals, executor } = setup();
      const desktop = fakeDesktop();
      registry.addConnection('c1', OWNER, desktop.send);

      const running = executor.execute(SESSION, 'shell', '{}', null, true, null);
      expect(approvals.isPending(desktop.lastRequestId())).toBe(true);
      jest.advanceTimersByTime(TIMEOUT_MS);
      await running;

      expect(approvals.listPending(SESSION)).toEqual([]);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('forgets the approval when the client disconnects', async () => {
      const { registry, approvals, executor } = setup();
      registry.addConnection('c1', OWNER, fakeDesktop().send);

      const running = executor.execute(SESSION, 'shell', '{}', null, true, null);
      expect(approvals.listPending(SESSION)).toHaveLength(1);
      registry.removeConnection('c1');
      await running;

      expect(approvals.listPending(SESSION)).toEqual([]);
    });

    it('registers nothing when no client is connected', async () => {
      const { approvals, executor } = setup();
      await executor.execute(SESSION, 'shell', '{}', null, true, 'reason');
      expect(approvals.listPending(SESSION)).toEqual([]);
    });

    it('does not register calls that need no approval', () => {
      const { registry, approvals, executor } = setup();
      registry.addConnection('c1', OWNER, fakeDesktop().send);
      void executor.execute(SESSION, 'read_file', '{}', null, false, null);
      expect(approvals.listPending(SESSION)).toEqual([]);
      registry.removeConnection('c1');
    });
  });

  it('runs concurrent calls of one session independently', async () => {
    const { registry, executor } = setup();
    const desktop = fakeDesktop();
    registry.addConnection('c1', OWNER, desktop.send);

    const first = executor.execute(SESSION, 'read_file', '{"path":"a"}', null, false, null);
    const second = executor.execute(SESSION, 'read_file', '{"path":"b"}', null, false, null);
    const [firstId, secondId] = desktop.events.map((event) => String(event.data.requestId));
    expect(firstId).not.toBe(secondId);

    registry.completeRequest(secondId, 'B', OWNER);
    registry.completeRequest(firstId, 'A', OWNER);

    await expect(Promise.all([first, second])).resolves.toEqual(['A', 'B']);
    expect(jest.getTimerCount()).toBe(0);
  });
});
