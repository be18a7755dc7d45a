import { scopeSlot } from './scope-slot';

const slot = scopeSlot<string>();

/**
 * The id of the run (execution) the current code belongs to, carried across awaits so that
 * events raised deep inside a run — a desktop tool request, questions for the user — carry
 * `executionId` like every other event of the run (interface.md).
 */
export const ExecutionScope = {
  run<T>(executionId: string, fn: () => T): T {
    return slot.run(executionId, fn);
  },
  /** The current run's id, or `undefined` outside a run. */
  currentExecutionId(): string | undefined {
    return slot.get();
  },
};
