import { getEventListeners } from 'node:events';
import { RoundResults } from './round-results';

describe('RoundResults', () => {
  it('answers a result that is there at once, not as a promise, in call order', () => {
    const results = new RoundResults<{ n: number }>(2, new AbortController().signal);
    results.set(1, { n: 1 });
    results.set(0, { n: 0 });
    expect(results.next()).toEqual({ n: 0 });
    expect(results.next()).toEqual({ n: 1 });
  });

  it('answers a promise of a result still to come, settled when it is set', async () => {
    const results = new RoundResults<{ n: number }>(2, new AbortController().signal);
    const waiting = results.next();
    expect(waiting).toBeInstanceOf(Promise);
    results.set(1, { n: 1 });
    results.set(0, { n: 0 });
    await expect(waiting).resolves.toEqual({ n: 0 });
    expect(results.next()).toEqual({ n: 1 });
  });

  it('reads each result once, and refuses to read past the round or twice at a time', () => {
    const results = new RoundResults<{ n: number }>(2, new AbortController().signal);
    results.set(0, { n: 0 });
    expect(results.next()).toEqual({ n: 0 });
    void results.next();
    expect(() => results.next()).toThrow('already awaited');
    results.set(1, { n: 1 });
    expect(() => results.next()).toThrow('every result of the round has been read');
  });

  it('takes the outcome of a call, result or failure, and its answer never rejects', async () => {
    const results = new RoundResults<{ n: number }>(3, new AbortController().signal);
    await expect(results.take(0, Promise.resolve({ n: 0 }))).resolves.toBeUndefined();
    await expect(results.take(2, Promise.reject(new Error('stored late')))).resolves.toBeUndefined();
    expect(results.next()).toEqual({ n: 0 });
    const waiting = results.next();
    await expect(results.take(1, Promise.reject(new Error('store failed')))).resolves.toBeUndefined();
    await expect(waiting).rejects.toThrow('store failed');
    expect(() => results.next()).toThrow('stored late');
  });

  it('answers null for a call without a result once the run is cancelled, and keeps the results that came first', async () => {
    const controller = new AbortController();
    const results = new RoundResults<{ n: number }>(3, controller.signal);
    results.set(2, { n: 2 });
    const waiting = results.next();
    controller.abort();
    await expect(waiting).resolves.toBeNull();
    expect(results.next()).toBeNull();
    expect(results.next()).toEqual({ n: 2 });
  });

  it('fails the calls without a result when the round cannot run them, and keeps the results it has', async () => {
    const results = new RoundResults<{ n: number }>(3, new AbortController().signal);
    results.set(1, { n: 1 });
    const waiting = results.next();
    results.failRemaining(new Error('the round stopped'));
    await expect(waiting).rejects.toThrow('the round stopped');
    expect(results.next()).toEqual({ n: 1 });
    expect(() => results.next()).toThrow('the round stopped');
  });

  it('puts one listener on the run signal for the whole round, made only when it has to wait, and drops it when closed', async () => {
    const controller = new AbortController();
    const results = new RoundResults<{ n: number }>(100, controller.signal);
    for (let position = 0; position < 100; position += 2) results.set(position, { n: position });
    expect(results.next()).toEqual({ n: 0 });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    for (let position = 1; position < 100; position += 2) {
      const waiting = results.next();
      results.set(position, { n: position });
      await expect(waiting).resolves.toEqual({ n: position });
      if (position + 1 < 100) expect(results.next()).toEqual({ n: position + 1 });
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    results.close();
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});
