import { McpRequestStoppedError, withRequestDeadline, type McpRequestControl } from './mcp-request-deadline';

/** A request that answers only when told to, exposing what it was started with. */
function pendingRequest(): { start: (control: McpRequestControl) => Promise<string>; control: () => McpRequestControl; answer: (text: string) => void } {
  let control: McpRequestControl | undefined;
  let answer: (text: string) => void = () => undefined;
  return {
    start: (given) => {
      control = given;
      return new Promise<string>((resolve) => {
        answer = resolve;
      });
    },
    control: () => control!,
    answer: (text) => answer(text),
  };
}

async function stopReason(promise: Promise<unknown>): Promise<McpRequestStoppedError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof McpRequestStoppedError)) throw new Error(`expected an McpRequestStoppedError, got ${String(error)}`);
  return error;
}

describe('withRequestDeadline', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('resolves with the answer that comes in time', async () => {
    const request = pendingRequest();
    const result = withRequestDeadline({ timeoutMs: 1_000 }, request.start);

    await jest.advanceTimersByTimeAsync(999);
    request.answer('done');

    await expect(result).resolves.toBe('done');
    expect(request.control().signal.aborted).toBe(false);
    expect(jest.getTimerCount()).toBe(0);
  });

  describe('when no answer comes within timeoutMs', () => {
    it('rejects with a timeout and aborts the request with the same error', async () => {
      const request = pendingRequest();
      const result = stopReason(withRequestDeadline({ timeoutMs: 1_000 }, request.start));

      await jest.advanceTimersByTimeAsync(1_000);
      const error = await result;

      expect(error.reason).toBe('timeout');
      expect(request.control().signal.aborted).toBe(true);
      expect(request.control().signal.reason).toBe(error);
    });
  });

  describe('when the request reports progress', () => {
    it('starts the timeout again with each report', async () => {
      const request = pendingRequest();
      const result = withRequestDeadline({ timeoutMs: 1_000 }, request.start);

      for (let i = 0; i < 5; i++) {
        await jest.advanceTimersByTimeAsync(800);
        request.control().progress();
      }
      request.answer('after 4 s');

      await expect(result).resolves.toBe('after 4 s');
    });

    it('ignores a report that comes after the request ended', async () => {
      const request = pendingRequest();
      const result = withRequestDeadline({ timeoutMs: 1_000 }, request.start);
      request.answer('done');
      await result;

      request.control().progress();

      expect(jest.getTimerCount()).toBe(0);
    });

    it('still stops at maxTotalTimeoutMs', async () => {
      const request = pendingRequest();
      const result = stopReason(withRequestDeadline({ timeoutMs: 1_000, maxTotalTimeoutMs: 2_500 }, request.start));

      for (let i = 0; i < 3; i++) {
        await jest.advanceTimersByTimeAsync(800);
        request.control().progress();
      }
      await jest.advanceTimersByTimeAsync(100);

      expect((await result).reason).toBe('max-total-timeout');
    });
  });

  describe("when the caller's signal fires", () => {
    it('rejects at once as cancelled, carrying the reason, and aborts the request', async () => {
      const request = pendingRequest();
      const caller = new AbortController();
      const result = stopReason(withRequestDeadline({ timeoutMs: 60_000, signal: caller.signal }, request.start));

      caller.abort('the run was cancelled');
      const error = await result;

      expect(error.reason).toBe('cancelled');
      expect(error.callerReason).toBe('the run was cancelled');
      expect(request.control().signal.aborted).toBe(true);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('does not start a request whose signal has already fired', async () => {
      const start = jest.fn(pendingRequest().start);

      const error = await stopReason(withRequestDeadline({ timeoutMs: 1_000, signal: AbortSignal.abort() }, start));

      expect(error.reason).toBe('cancelled');
      expect(start).not.toHaveBeenCalled();
    });

    it('stops listening to the signal once the request has ended', async () => {
      const request = pendingRequest();
      const caller = new AbortController();
      const result = withRequestDeadline({ timeoutMs: 1_000, signal: caller.signal }, request.start);
      request.answer('done');
      await result;

      caller.abort();

      expect(request.control().signal.aborted).toBe(false);
    });
  });
});
