import { scopeSlot } from './scope-slot';

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('scopeSlot', () => {
  it('carries its value across awaits, timers and promise callbacks, and has none outside a run', async () => {
    const slot = scopeSlot<string>();
    expect(slot.get()).toBeUndefined();
    const seen = await slot.run('a', async () => {
      const values = [slot.get()];
      await tick();
      values.push(slot.get());
      values.push(await new Promise<string | undefined>((resolve) => setTimeout(() => resolve(slot.get()), 1)));
      values.push(await Promise.resolve().then(() => slot.get()));
      return values;
    });
    expect(seen).toEqual(['a', 'a', 'a', 'a']);
    expect(slot.get()).toBeUndefined();
  });

  it('leaves the other slots as they are: each keeps the value of its own nearest run', async () => {
    const run = scopeSlot<string>();
    const call = scopeSlot<{ id: string }>();
    const seen = await run.run('run-1', () =>
      call.run({ id: 'call-1' }, async () => {
        await tick();
        const inner = await run.run('run-2', async () => {
          await tick();
          return [run.get(), call.get()?.id];
        });
        return [...inner, run.get(), call.get()?.id];
      }),
    );
    expect(seen).toEqual(['run-2', 'call-1', 'run-1', 'call-1']);
  });

  it('keeps runs that overlap apart', async () => {
    const slot = scopeSlot<number>();
    const values = await Promise.all(
      [1, 2, 3].map((n) =>
        slot.run(n, async () => {
          await tick();
          await new Promise((resolve) => setTimeout(resolve, 4 - n));
          return slot.get();
        }),
      ),
    );
    expect(values).toEqual([1, 2, 3]);
  });
});
