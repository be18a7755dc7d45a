import { ApprovalRequests, type ApprovalChannel } from './approval-requests';

const OWNER = 1;
const SESSION = 5;

class RecordingChannel implements ApprovalChannel {
  readonly events: Array<{ sessionId: number; type: string; data: Record<string, unknown> }> = [];
  connected = true;
  accepts = true;
  hasConnection(): boolean {
    return this.connected;
  }
  sendToSession(sessionId: number, type: string, data: Record<string, unknown>): number {
    this.events.push({ sessionId, type, data });
    return this.accepts ? 1 : 0;
  }
  ofType(type: string): Array<Record<string, unknown>> {
    return this.events.filter((event) => event.type === type).map((event) => event.data);
  }
}

function setup(options: { timeoutMs?: number } = {}) {
  const channel = new RecordingChannel();
  let id = 0;
  const approvals = new ApprovalRequests(channel, { timeoutMs: options.timeoutMs ?? 60_000, now: () => 1_000, newId: () => `ap-${++id}` });
  const call = { sessionId: SESSION, ownerUserId: OWNER, toolCallId: 'call-1', toolName: 'shell', argumentsJson: '{"command":"ls","cwd":"."}', reason: 'Shell commands need approval at READ_WRITE' };
  return { channel, approvals, call };
}

const answer = (overrides: Record<string, unknown> = {}) => ({ userId: OWNER, sessionId: SESSION, requestId: 'ap-1', approved: true, ...overrides });

describe('ApprovalRequests', () => {
  it("offers the call to the owner's clients and resolves with the approval", async () => {
    const { channel, approvals, call } = setup();
    const pending = approvals.request(call);
    expect(channel.ofType('approval_request')).toEqual([
      {
        requestId: 'ap-1',
        toolCallId: 'call-1',
        toolName: 'shell',
        arguments: '{"command":"ls","cwd":"."}',
        reason: 'Shell commands need approval at READ_WRITE',
        expiresAt: new Date(61_000).toISOString(),
      },
    ]);
    expect(approvals.pending(SESSION)).toHaveLength(1);
    expect(approvals.answer(answer({ message: 'go ahead' }))).toBeNull();
    await expect(pending).resolves.toEqual({ outcome: 'approved', message: 'go ahead' });
    expect(channel.ofType('approval_resolved')).toEqual([{ requestId: 'ap-1', outcome: 'approved', message: 'go ahead' }]);
    expect(approvals.pending(SESSION)).toEqual([]);
  });

  it('resolves with a denial', async () => {
    const { approvals, call } = setup();
    const pending = approvals.request(call);
    expect(approvals.answer(answer({ approved: false }))).toBeNull();
    await expect(pending).resolves.toEqual({ outcome: 'denied' });
  });

  describe('when an answer is forged', () => {
    it.each([
      ['another user', { userId: 2 }],
      ['another session', { sessionId: 6 }],
      ['an unknown request', { requestId: 'ap-9' }],
      ['changed arguments (text)', { arguments: '{"command":"rm -rf /"}' }],
      ['changed arguments (object)', { arguments: { command: 'ls', cwd: '/' } }],
    ])('refuses one from %s and changes nothing', async (_what, forged) => {
      const { channel, approvals, call } = setup();
      const pending = approvals.request(call);
      expect(approvals.answer(answer(forged))).toEqual(expect.any(String));
      expect(approvals.pending(SESSION)).toHaveLength(1);
      expect(channel.ofType('approval_resolved')).toEqual([]);
      // The real owner can still answer.
      expect(approvals.answer(answer({ approved: false }))).toBeNull();
      await expect(pending).resolves.toEqual({ outcome: 'denied' });
    });

    it('accepts echoed arguments that are the stored ones, in any key order', async () => {
      const { approvals, call } = setup();
      const pending = approvals.request(call);
      expect(approvals.answer(answer({ arguments: { cwd: '.', command: 'ls' } }))).toBeNull();
      await expect(pending).resolves.toEqual(expect.objectContaining({ outcome: 'approved' }));
    });

    it('refuses a second answer to a request already answered', async () => {
      const { approvals, call } = setup();
      const pending = approvals.request(call);
      expect(approvals.answer(answer({ approved: false }))).toBeNull();
      expect(approvals.answer(answer({ approved: true }))).toEqual(expect.any(String));
      await expect(pending).resolves.toEqual({ outcome: 'denied' });
    });
  });

  it('expires a request nobody answers', async () => {
    jest.useFakeTimers();
    try {
      const { channel, approvals, call } = setup({ timeoutMs: 500 });
      const pending = approvals.request(call);
      jest.advanceTimersByTime(500);
      await expect(pending).resolves.toEqual({ outcome: 'expired', message: 'no answer within 500 ms' });
      expect(channel.ofType('approval_resolved')).toEqual([{ requestId: 'ap-1', outcome: 'expired', message: 'no answer within 500 ms' }]);
      expect(approvals.answer(answer())).toEqual(expect.any(String));
    } finally {
      jest.useRealTimers();
    }
  });

  it('withdraws a request when its run is cancelled', async () => {
    const { channel, approvals, call } = setup();
    const controller = new AbortController();
    const pending = approvals.request(call, controller.signal);
    controller.abort();
    await expect(pending).resolves.toEqual({ outcome: 'withdrawn', message: 'the run was cancelled' });
    expect(channel.ofType('approval_resolved')).toEqual([expect.objectContaining({ outcome: 'withdrawn' })]);
    expect(approvals.pending(SESSION)).toEqual([]);
  });

  it("withdraws every request of a session on demand", async () => {
    const { approvals, call } = setup();
    const first = approvals.request(call);
    const second = approvals.request({ ...call, toolCallId: 'call-2' });
    expect(approvals.withdrawSession(SESSION, 'the session was deleted')).toBe(2);
    await expect(Promise.all([first, second])).resolves.toEqual([
      { outcome: 'withdrawn', message: 'the session was deleted' },
      { outcome: 'withdrawn', message: 'the session was deleted' },
    ]);
  });

  it('answers at once, sending nothing, when no client of the owner is connected', async () => {
    const { channel, approvals, call } = setup();
    channel.connected = false;
    await expect(approvals.request(call)).resolves.toEqual(expect.objectContaining({ outcome: 'undelivered' }));
    expect(channel.events).toEqual([]);
  });

  it('answers at once when no connection took the request', async () => {
    const { channel, approvals, call } = setup();
    channel.accepts = false;
    await expect(approvals.request(call)).resolves.toEqual(expect.objectContaining({ outcome: 'undelivered' }));
    expect(approvals.pending(SESSION)).toEqual([]);
  });

  it('does not ask for a call whose run was already cancelled', async () => {
    const { channel, approvals, call } = setup();
    await expect(approvals.request(call, AbortSignal.abort())).resolves.toEqual(expect.objectContaining({ outcome: 'withdrawn' }));
    expect(channel.events).toEqual([]);
  });
});
