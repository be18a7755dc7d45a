import { RoundSchedule } from './round-schedule';

/** A call whose end the test decides, recording when it starts. */
function call(log: string[], name: string) {
  let finish!: (value: string) => void;
  let fail!: (error: Error) => void;
  const ended = new Promise<string>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  return {
    start: () => {
      log.push(`start ${name}`);
      return ended;
    },
    finish: () => finish(name),
    fail: () => fail(new Error(name)),
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('RoundSchedule', () => {
  it('starts shared calls together, at once', () => {
    const log: string[] = [];
    const schedule = new RoundSchedule();
    const [a, b, c] = ['a', 'b', 'c'].map((name) => call(log, name));
    for (const each of [a, b, c]) void schedule.add('shared', each.start);
    expect(log).toEqual(['start a', 'start b', 'start c']);
  });

  describe('when a call is exclusive', () => {
    it('starts it once every call before it has settled, and the calls after it once it has', async () => {
      const log: string[] = [];
      const schedule = new RoundSchedule();
      const [read1, read2, write, read3] = ['read1', 'read2', 'write', 'read3'].map((name) => call(log, name));
      const results = [schedule.add('shared', read1.start), schedule.add('shared', read2.start), schedule.add('exclusive', write.start), schedule.add('shared', read3.start)];
      await turn();
      expect(log).toEqual(['start read1', 'start read2']);

      read2.finish();
      await turn();
      expect(log).toEqual(['start read1', 'start read2']);
      read1.fail();
      await turn();
      expect(log).toEqual(['start read1', 'start read2', 'start write']);

      write.finish();
      await turn();
      expect(log).toEqual(['start read1', 'start read2', 'start write', 'start read3']);
      read3.finish();
      await expect(Promise.allSettled(results)).resolves.toEqual([
        { status: 'rejected', reason: new Error('read1') },
        { status: 'fulfilled', value: 'read2' },
        { status: 'fulfilled', value: 'write' },
        { status: 'fulfilled', value: 'read3' },
      ]);
    });

    it('runs exclusive calls one after the other, in order, even when one fails', async () => {
      const log: string[] = [];
      const schedule = new RoundSchedule();
      const calls = ['w1', 'w2', 'w3'].map((name) => call(log, name));
      const results = calls.map((each) => schedule.add('exclusive', each.start));
      expect(log).toEqual(['start w1']);
      calls[0].fail();
      await turn();
      expect(log).toEqual(['start w1', 'start w2']);
      calls[1].finish();
      await turn();
      expect(log).toEqual(['start w1', 'start w2', 'start w3']);
      calls[2].finish();
      await expect(results[2]).resolves.toBe('w3');
      await expect(results[0]).rejects.toThrow('w1');
    });

    it('waits for a shared call that came after an earlier exclusive one, and for that one', async () => {
      const log: string[] = [];
      const schedule = new RoundSchedule();
      const [w1, read, w2] = ['w1', 'read', 'w2'].map((name) => call(log, name));
      void schedule.add('exclusive', w1.start);
      void schedule.add('shared', read.start);
      void schedule.add('exclusive', w2.start);
      expect(log).toEqual(['start w1']);
      w1.finish();
      await turn();
      expect(log).toEqual(['start w1', 'start read']);
      read.finish();
      await turn();
      expect(log).toEqual(['start w1', 'start read', 'start w2']);
      w2.finish();
    });
  });
});
