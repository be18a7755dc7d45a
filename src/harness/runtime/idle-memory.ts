import * as v8 from 'node:v8';
import * as vm from 'node:vm';

let collector: (() => void) | null | undefined;

/**
 * Runs a full garbage collection now; returns whether it could. V8 collects when it allocates,
 * so a server that goes quiet after a burst of work keeps the garbage of that burst — and the
 * memory it takes — until the next burst. Called when the server has gone idle, this gives it back.
 *
 * The function is V8's `gc`, exposed once at runtime the way test runners do it (`--expose-gc`
 * set as a flag, then read from a new context); where that is refused it does nothing.
 */
export function collectGarbage(): boolean {
  if (collector === undefined) {
    try {
      v8.setFlagsFromString('--expose-gc');
      const gc: unknown = vm.runInNewContext('gc');
      collector = typeof gc === 'function' ? (gc as () => void) : null;
    } catch {
      collector = null;
    }
  }
  if (!collector) return false;
  collector();
  return true;
}
