import { AsyncLocalStorage } from 'node:async_hooks';

const storage = new AsyncLocalStorage<string>();

/**
 * The id of the tool call being executed, carried implicitly across awaits so that tools that
 * start nested work (delegates, background jobs) can tell which call they belong to.
 */
export const ToolCallContext = {
  run<T>(callId: string, fn: () => T): T {
    return storage.run(callId, fn);
  },
  /** The current call id, or `undefined` outside a tool call. */
  currentCallId(): string | undefined {
    return storage.getStore();
  },
};
