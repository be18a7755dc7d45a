import type { ToolConcurrency } from '../tool/tool-invocation';
import { runInTurns } from './round-schedule';

/** A call whose end the test decides, recording when it starts. */
interface TestCall {
  name: string;
  concurrency: ToolConcurrency;
  finish(): void;
  fail(): void;
  ended: Promise<string>;
}

function call(name: string, concurrency: ToolConcurrency): TestCall {
  let finish!: (value: string) => void;
  let fail!: (error: Error) => void;
  const ended = new Promise<string>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  ended.catch(() => undefined);
  return { name, concurrency, finish: () => finish(name), fail: () => fail(new Error(name)), ended };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Runs `calls` in turns, logging each start; `stopped` decides when no more may start. */
function run(calls: Array<TestCall | null>, stopped: () => boolean = () => false) {
  const log: string[] = [];
  const done = runInTurns(
    calls.map((each) => each?.concurrency ?? null),
    (position) => {
      const each = calls[position]!;
      log.push(`start ${each.name} at ${position}`);
      return each.ended;
    },
    stopped,
  );
  return { log, done };
}

describe('runInTurns', () => {
  it('starts shared calls together, before it returns', () => {
    const [a, b, c] = ['a', 'b', 'c'].map((name) => call(name, 'shared'));
    const { log } = run([a, b, c]);
    expect(log).toEqual(['start a at 0', 'start b at 1', 'start c at 2']);
  });

  it('skips the calls that take no turn, keeping the positions of the others', () => {
    const { log } = run([null, call('a', 'exclusive'), null, call('b', 'shared')]);
    expect(log).toEqual(['start a at 1']);
  });

  describe('when a call is exclusive', () => {
    it('starts it once every call before it has settled, and the calls after it once it has', async () => {
      const [read1, read2] = ['read1', 'read2'].map((name) => call(name, 'shared'));
      const write = call('write', 'exclusive');
      const read3 = call('read3', 'shared');
      const { log, done } = run([read1, read2, write, read3]);
      await turn();
      expect(log).toEqual(['start read1 at 0', 'start read2 at 1']);

      read2.finish();
      await turn();
      expect(log).toEqual(['start read1 at 0', 'start read2 at 1']);
      read1.fail();
      await turn();
      expect(log).toEqual(['start read1 at 0', 'start read2 at 1', 'start write at 2']);

      write.finish();
      await turn();
      expect(log).toEqual(['start read1 at 0', 'start read2 at 1', 'start write at 2', 'start read3 at 3']);
      read3.finish();
      await expect(done).resolves.toBeUndefined();
    });

    it('runs exclusive calls one after the other, in order, even when one fails', async () => {
      const calls = ['w1', 'w2', 'w3'].map((name) => call(name, 'exclusive'));
      const { log, done } = run(calls);
      expect(log).toEqual(['start w1 at 0']);
      calls[0].fail();
      await turn();
      expect(log).toEqual(['start w1 at 0', 'start w2 at 1']);
      calls[1].finish();
      await turn();
      expect(log).toEqual(['start w1 at 0', 'start w2 at 1', 'start w3 at 2']);
      calls[2].finish();
      await expect(done).resolves.toBeUndefined();
    });

    it('waits for a shared call that came after an earlier exclusive one, and for that one', async () => {
      const w1 = call('w1', 'exclusive');
      const read = call('read', 'shared');
      const w2 = call('w2', 'exclusive');
      const { log } = run([w1, read, w2]);
      expect(log).toEqual(['start w1 at 0']);
      w1.finish();
      await turn();
      expect(log).toEqual(['start w1 at 0', 'start read at 1']);
      read.finish();
      await turn();
      expect(log).toEqual(['start w1 at 0', 'start read at 1', 'start w2 at 2']);
      w2.finish();
    });
  });

  it('starts no call once it is stopped, and resolves without waiting for the calls that cannot start', async () => {
    let stopped = false;
    const [w1, w2] = ['w1', 'w2'].map((name) => call(name, 'exclusive'));
    const read = call('read', 'shared');
    const { log, done } = run([w1, w2, read], () => stopped);
    expect(log).toEqual(['start w1 at 0']);
    stopped = true;
    w1.finish();
    await expect(done).resolves.toBeUndefined();
    expect(log).toEqual(['start w1 at 0']);
  });

  it('starts each call of a long exclusive round only when its turn comes', async () => {
    const calls = Array.from({ length: 1_000 }, (_, index) => call(`w${index}`, 'exclusive'));
    const { log, done } = run(calls);
    for (const [index, each] of calls.entries()) {
      expect(log).toHaveLength(index + 1);
      each.finish();
      await turn();
    }
    await expect(done).resolves.toBeUndefined();
  });
});
