import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The values of every slot in the current code's scope, by slot number. Never changed once made:
 * a slot's `run` makes a new one.
 */
type Frame = readonly unknown[];

/**
 * The one `AsyncLocalStorage` of Harness's own scopes. On Node 20 each instance in use adds its
 * own work to the hook that runs for every promise the process makes; two of them (the run's
 * id, the tool call) cost a 100-call round about 5% of the server's time, so every slot
 * shares this one.
 */
const storage = new AsyncLocalStorage<Frame>();
let slots = 0;

/** A value carried across awaits, as an `AsyncLocalStorage` of its own would carry it. */
export interface ScopeSlot<T> {
  /** Runs `fn` with the slot set to `value`; the other slots keep the values they have here. */
  run<R>(value: T, fn: () => R): R;
  /** The slot's value in the current scope, or `undefined` outside any `run` of it. */
  get(): T | undefined;
}

/** A new slot, independent of every other: running one leaves the others as they are. */
export function scopeSlot<T>(): ScopeSlot<T> {
  const index = slots++;
  return {
    run<R>(value: T, fn: () => R): R {
      const frame = (storage.getStore() ?? []).slice();
      frame[index] = value;
      return storage.run(frame, fn);
    },
    get(): T | undefined {
      return storage.getStore()?.[index] as T | undefined;
    },
  };
}
