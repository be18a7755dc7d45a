import { RoundResults } from './round-results';

/** Listeners on a signal, counted the way `EventTarget` keeps them. */
function countingSignal(controller: AbortController) {
  const signal = controller.signal;
  let listeners = 0;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
    listeners++;
    add(...args);
  }) as AbortSignal['addEventListener'];
  signal.removeEventListener = ((...args: Parameters<AbortSignal['removeEventListener']>) => {
    listeners--;
    remove(...args);
  }) as AbortSignal['removeEventListener'];
  return { signal, listeners: () => listeners };
}

describe('RoundResults', () => {
  it('answers a result that is there at once, not as a promise', () => {
    const results = new RoundResults<{ n: number }>(2, new AbortController().signal);
    results.set(1, { n: 1 });
    expect(results.at(1)).toEqual({ n: 1 });
  });

  it('answers a promise of a result still to come, settled when it is set', async () => {
    const results = new RoundResults<{ n: number }>(2, new AbortController().signal);
    const waiting = results.at(0);
    expect(waiting).toBeInstanceOf(Promise);
    results.set(1, { n: 1 });
    results.set(0, { n: 0 });
    await expect(waiting).resolves.toEqual({ n: 0 });
  });

  it('takes the outcome of a call, result or failure, and its answer never rejects', async () => {
    const results = new RoundResults<{ n: number }>(2, new AbortController().signal);
    const waiting = results.at(1);
    await expect(results.take(0, Promise.resolve({ n: 0 }))).resolves.toBeUndefined();
    await expect(results.take(1, Promise.reject(new Error('store failed')))).resolves.toBeUndefined();
    await expect(waiting).rejects.toThrow('store failed');
    expect(results.at(0)).toEqual({ n: 0 });
    expect(() => results.at(1)).toThrow('store failed');
  });

  it('answers null for a call without a result once the run is cancelled, and keeps the results that came first', async () => {
    const controller = new AbortController();
    const results = new RoundResults<{ n: number }>(3, controller.signal);
    results.set(2, { n: 2 });
    const waiting = results.at(0);
    controller.abort();
    await expect(waiting).resolves.toBeNull();
    expect(results.at(1)).toBeNull();
    expect(results.at(2)).toEqual({ n: 2 });
  });

  it('fails the calls without a result when the round cannot run them, and keeps the results it has', async () => {
    const results = new RoundResults<{ n: number }>(3, new AbortController().signal);
    results.set(0, { n: 0 });
    const waiting = results.at(1);
    results.failRemaining(new Error('the round stopped'));
    await expect(waiting).rejects.toThrow('the round stopped');
    expect(results.at(0)).toEqual({ n: 0 });
    expect(() => results.at(2)).toThrow('the round stopped');
  });

  it('puts one listener on the run signal for the whole round, made only when it has to wait, and drops it when closed', async () => {
    const { signal, listeners } = countingSignal(new AbortController());
    const results = new RoundResults<{ n: number }>(100, signal);
    for (let position = 0; position < 100; position += 2) results.set(position, { n: position });
    expect(results.at(0)).toEqual({ n: 0 });
    expect(listeners()).toBe(0);
    for (let position = 1; position < 100; position += 2) {
      const waiting = results.at(position);
      results.set(position, { n: position });
      await expect(waiting).resolves.toEqual({ n: position });
    }
    expect(listeners()).toBe(1);
    results.close();
    expect(listeners()).toBe(0);
  });
});
