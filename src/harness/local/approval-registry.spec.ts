import { ApprovalRegistry } from './approval-registry';

describe('ApprovalRegistry', () => {
  let clock: number;
  let approvals: ApprovalRegistry;
  beforeEach(() => {
    clock = 100;
    approvals = new ApprovalRegistry({ now: () => clock });
  });

  it('tracks a registered request until it is resolved', () => {
    approvals.register('r1', { sessionId: 1, toolName: 'shell', dangerReason: 'rm -rf' });
    expect(approvals.isPending('r1')).toBe(true);

    expect(approvals.resolve('r1')).toBe(true);
    expect(approvals.isPending('r1')).toBe(false);
    expect(approvals.resolve('r1')).toBe(false);
  });

  it('lists the pending approvals of one session, oldest first', () => {
    approvals.register('r1', { sessionId: 1, toolName: 'shell', dangerReason: null });
    clock = 200;
    approvals.register('r2', { sessionId: 2, toolName: 'write_file', dangerReason: null });
    clock = 300;
    approvals.register('r3', { sessionId: 1, toolName: 'mcp__fs__delete', dangerReason: 'MCP tool' });

    expect(approvals.listPending(1)).toEqual([
      { requestId: 'r1', sessionId: 1, toolName: 'shell', dangerReason: null, createdAt: 100 },
      { requestId: 'r3', sessionId: 1, toolName: 'mcp__fs__delete', dangerReason: 'MCP tool', createdAt: 300 },
    ]);
    expect(approvals.listPending(3)).toEqual([]);
  });

  it('hands out copies, so a caller cannot alter the registry', () => {
    approvals.register('r1', { sessionId: 1, toolName: 'shell', dangerReason: null });
    approvals.listPending(1)[0].toolName = 'changed';
    expect(approvals.listPending(1)[0].toolName).toBe('shell');
  });

  it('clears one session and keeps the others', () => {
    approvals.register('r1', { sessionId: 1, toolName: 'shell', dangerReason: null });
    approvals.register('r2', { sessionId: 2, toolName: 'shell', dangerReason: null });
    approvals.register('r3', { sessionId: 1, toolName: 'shell', dangerReason: null });

    expect(approvals.clearSession(1)).toEqual(['r1', 'r3']);
    expect(approvals.listPending(1)).toEqual([]);
    expect(approvals.isPending('r2')).toBe(true);
  });

  it('does not resolve prototype keys as requests', () => {
    expect(approvals.isPending('__proto__')).toBe(false);
    expect(approvals.resolve('constructor')).toBe(false);
  });
});
