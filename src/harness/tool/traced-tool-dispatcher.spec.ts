import type { ToolInvocation, ToolInvocationDispatcher } from './tool-invocation';
import { TracedToolDispatcher } from './traced-tool-dispatcher';

const invocation = (toolName: string): ToolInvocation => ({
  callId: 'c1',
  toolName,
  argumentsJson: '{}',
  executionMode: 'CLOUD',
  sessionId: 1,
  userId: 1,
  executionUserId: null,
  workspace: null,
  permissionLevel: 'FULL',
  modelConfig: null,
  sessionTools: null,
});

describe('TracedToolDispatcher', () => {
  it("keeps the inner dispatcher's scheduling", () => {
    const inner: ToolInvocationDispatcher = {
      dispatchInvocation: async () => ({ callId: 'c1', status: 'success', content: '' }),
      concurrencyOf: (call) => (call.toolName === 'write_file' ? 'exclusive' : 'shared'),
    };
    const traced = new TracedToolDispatcher(inner);
    expect(traced.concurrencyOf(invocation('write_file'))).toBe('exclusive');
    expect(traced.concurrencyOf(invocation('read_file'))).toBe('shared');
  });

  it('lets every call share its round when the inner dispatcher does not schedule', () => {
    const traced = new TracedToolDispatcher({ dispatchInvocation: async () => ({ callId: 'c1', status: 'success', content: '' }) });
    expect(traced.concurrencyOf(invocation('write_file'))).toBe('shared');
  });

  it('answers with the inner result', async () => {
    const traced = new TracedToolDispatcher({ dispatchInvocation: async () => ({ callId: 'c1', status: 'error', content: 'x', errorMessage: 'x' }) });
    await expect(traced.dispatchInvocation(invocation('read_file'))).resolves.toEqual(expect.objectContaining({ status: 'error', content: 'x' }));
  });
});
