import { getEventListeners } from 'node:events';
import { CallDeadlines, openCallCount, openCallSignal } from './call-signal';

describe('openCallSignal', () => {
  afterEach(() => jest.useRealTimers());

  it('gives no signal to a call with neither a run signal nor a deadline', () => {
    expect(openCallSignal(undefined, null)).toBeUndefined();
  });

  describe('when the run is cancelled', () => {
    it("aborts every open call with the run's reason, through one listener on the run's signal", () => {
      const run = new AbortController();
      const calls = Array.from({ length: 3_200 }, () => openCallSignal(run.signal, null)!);
      expect(getEventListeners(run.signal, 'abort')).toHaveLength(1);
      expect(openCallCount(run.signal)).toBe(3_200);

      const reason = new Error('The run was cancelled');
      run.abort(reason);

      expect(calls.every((call) => call.signal.aborted && call.signal.reason === reason)).toBe(true);
      expect(openCallCount(run.signal)).toBe(0);
      for (const call of calls) call.close();
      expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
    });

    it('does not abort a call that was closed before', () => {
      const run = new AbortController();
      const closed = openCallSignal(run.signal, null)!;
      const open = openCallSignal(run.signal, null)!;
      closed.close();
      run.abort();
      expect(closed.signal.aborted).toBe(false);
      expect(open.signal.aborted).toBe(true);
    });

    it('aborts a signal the tool already read, and one it reads afterwards, with the same reason', () => {
      const run = new AbortController();
      const early = openCallSignal(run.signal, null)!;
      const late = openCallSignal(run.signal, null)!;
      const seenEarly = early.signal;
      const reasons: unknown[] = [];
      late.onAbort((reason) => reasons.push(reason));
      const reason = new Error('stop');
      run.abort(reason);
      expect(seenEarly.aborted).toBe(true);
      expect(seenEarly.reason).toBe(reason);
      expect(late.signal.aborted).toBe(true);
      expect(late.signal.reason).toBe(reason);
      expect(reasons).toEqual([reason]);
    });

    it('opens a call already aborted when the run was cancelled before it', () => {
      const run = new AbortController();
      const reason = new Error('gone');
      run.abort(reason);
      const call = openCallSignal(run.signal, new CallDeadlines(1_000))!;
      expect(call.signal.reason).toBe(reason);
      expect(openCallCount(run.signal)).toBe(0);
      call.close();
    });
  });

  describe('when calls settle', () => {
    it("leaves no listener on the run's signal once the last call is closed, and adds one again for the next", () => {
      const run = new AbortController();
      const first = Array.from({ length: 100 }, () => openCallSignal(run.signal, null)!);
      first.forEach((call, index) => {
        call.close();
        expect(getEventListeners(run.signal, 'abort')).toHaveLength(index === first.length - 1 ? 0 : 1);
      });
      first[0].close();
      expect(openCallCount(run.signal)).toBe(0);

      const next = openCallSignal(run.signal, null)!;
      expect(getEventListeners(run.signal, 'abort')).toHaveLength(1);
      next.close();
      expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
    });

    it('stops their deadlines: one timer for all the calls, none once they are closed', () => {
      jest.useFakeTimers();
      const run = new AbortController();
      const deadlines = new CallDeadlines(60_000);
      const calls = Array.from({ length: 3_200 }, () => openCallSignal(run.signal, deadlines)!);
      expect(jest.getTimerCount()).toBe(1);
      expect(deadlines.size).toBe(3_200);
      for (const call of calls) call.close();
      expect(deadlines.size).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
    });
  });

  describe('when the deadline passes', () => {
    it('aborts the call with a TimeoutError, and only that call', () => {
      jest.useFakeTimers();
      const run = new AbortController();
      const slow = openCallSignal(run.signal, new CallDeadlines(50))!;
      const other = openCallSignal(undefined, new CallDeadlines(500))!;
      jest.advanceTimersByTime(49);
      const seen = slow.signal;
      expect(seen.aborted).toBe(false);
      jest.advanceTimersByTime(1);
      expect(seen.aborted).toBe(true);
      expect(slow.signal.aborted).toBe(true);
      expect(slow.signal.reason).toBeInstanceOf(DOMException);
      expect((slow.signal.reason as DOMException).name).toBe('TimeoutError');
      expect(run.signal.aborted).toBe(false);
      expect(other.signal.aborted).toBe(false);
      slow.close();
      other.close();
      expect(openCallCount(run.signal)).toBe(0);
    });

    it('stops each call of a shared timer at its own deadline, in the order they began', () => {
      jest.useFakeTimers();
      const deadlines = new CallDeadlines(100);
      const first = openCallSignal(undefined, deadlines)!;
      jest.advanceTimersByTime(30);
      const second = openCallSignal(undefined, deadlines)!;
      const finished = openCallSignal(undefined, deadlines)!;
      jest.advanceTimersByTime(30);
      const third = openCallSignal(undefined, deadlines)!;
      finished.close();

      jest.advanceTimersByTime(39);
      expect([first.aborted, second.aborted, third.aborted]).toEqual([false, false, false]);
      jest.advanceTimersByTime(1);
      expect([first.aborted, second.aborted, third.aborted]).toEqual([true, false, false]);
      jest.advanceTimersByTime(29);
      expect(second.aborted).toBe(false);
      jest.advanceTimersByTime(1);
      expect([second.aborted, third.aborted]).toEqual([true, false]);
      jest.advanceTimersByTime(30);
      expect(third.aborted).toBe(true);
      expect(finished.aborted).toBe(false);
      expect(deadlines.size).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
      for (const call of [first, second, third]) call.close();
    });

    it('keeps timing the calls that began after the first one finished', () => {
      jest.useFakeTimers();
      const deadlines = new CallDeadlines(100);
      const early = openCallSignal(undefined, deadlines)!;
      jest.advanceTimersByTime(60);
      const late = openCallSignal(undefined, deadlines)!;
      early.close();
      jest.advanceTimersByTime(99);
      expect(late.aborted).toBe(false);
      jest.advanceTimersByTime(1);
      expect(late.aborted).toBe(true);
      late.close();
      expect(jest.getTimerCount()).toBe(0);
    });
  });
});
