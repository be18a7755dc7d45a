import { scopeSlot } from '../runtime/scope-slot';

/** How far a running tool call has come (MCP's progress notification, as the tool reports it). */
export interface ToolCallProgress {
  /** Grows with every report; in the unit of `total` when that is given. */
  progress: number;
  total?: number;
  message?: string;
}

/** The call a tool is running for: its id, its cancellation, and where its progress goes. */
export interface ToolCallScope {
  callId: string;
  /** Fires when the call should stop: the run was cancelled or the call's deadline passed. */
  signal?: AbortSignal;
  onProgress?: (progress: ToolCallProgress) => void;
}

const slot = scopeSlot<ToolCallScope>();

/**
 * The tool call being executed, carried implicitly across awaits. `Tool.execute` receives only
 * the arguments and ids (its arity is the legacy contract), so this is how a tool reads the
 * call's `signal` and reports progress; tools that start nested work (delegates, background
 * jobs) can also tell which call they belong to.
 */
export const ToolCallContext = {
  run<T>(callId: string, fn: () => T): T {
    return slot.run({ callId }, fn);
  },
  /** Runs `fn` for a call with its signal and progress sink. */
  runScope<T>(scope: ToolCallScope, fn: () => T): T {
    return slot.run(scope, fn);
  },
  /** The current call id, or `undefined` outside a tool call. */
  currentCallId(): string | undefined {
    return slot.get()?.callId;
  },
  /** The current call's signal; `undefined` outside a call or for a call that cannot be cancelled. */
  signal(): AbortSignal | undefined {
    return slot.get()?.signal;
  },
  /** Reports the current call's progress; does nothing where nobody listens. Never throws. */
  reportProgress(progress: ToolCallProgress): void {
    try {
      slot.get()?.onProgress?.(progress);
    } catch {
      // Progress is for watchers only: a failing sink must not fail the tool.
    }
  },
};
