import type { ToolConcurrency } from '../tool/tool-invocation';

/**
 * Starts the calls of one round in their turns, as a readers–writer queue in call order: a
 * `shared` call (read-only) starts once every `exclusive` call before it has finished; an
 * `exclusive` call starts once every call before it has finished. So a read after an edit of
 * the same round sees the edit, two writes never race, and reads side by side still overlap.
 *
 * - `turns` holds each call's concurrency, in call order; `null` takes no turn (that call has its
 *   result already).
 * - Calls start as soon as nothing before them holds them back: the shared calls at the head of
 *   a round all start in the same tick, before this returns.
 * - A call is started only when its turn comes, and not once `stopped()` answers true: a call
 *   still waiting when the run is cancelled never starts.
 * - Nothing is made for a call before its turn — no promise, no listener — so a round of
 *   thousands of calls that run one at a time holds one of them at a time, not a chain of all.
 *
 * `start` may reject: the call has settled all the same. Resolves once every call it started
 * has settled, or once it stopped starting calls.
 */
export async function runInTurns(
  turns: ReadonlyArray<ToolConcurrency | null>,
  start: (position: number) => Promise<unknown>,
  stopped: () => boolean,
): Promise<void> {
  // The shared calls started since the last exclusive one that have not settled yet.
  let running = 0;
  let drained: (() => void) | null = null;
  const settled = (): void => {
    running--;
    if (running > 0 || drained === null) return;
    const wake = drained;
    drained = null;
    wake();
  };
  const untilDrained = (): Promise<void> => new Promise<void>((resolve) => (drained = resolve));

  for (let position = 0; position < turns.length; position++) {
    const concurrency = turns[position];
    if (concurrency === null) continue;
    if (concurrency === 'exclusive' && running > 0) await untilDrained();
    if (stopped()) return;
    if (concurrency === 'shared') {
      running++;
      start(position).then(settled, settled);
      continue;
    }
    try {
      await start(position);
    } catch {
      // A call that failed has finished too: the next one's turn has come.
    }
  }
  if (running > 0) await untilDrained();
}
