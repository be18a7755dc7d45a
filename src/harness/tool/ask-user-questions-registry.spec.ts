import {
  AskUserQuestionsCancelledError,
  AskUserQuestionsRegistry,
  AskUserQuestionsTimeoutError,
  UnknownAskUserQuestionsRequestError,
} from './ask-user-questions-registry';

function createRegistry() {
  let next = 1;
  return new AskUserQuestionsRegistry({ newId: () => `q-${next++}` });
}

describe('AskUserQuestionsRegistry', () => {
  let registry: AskUserQuestionsRegistry;
  beforeEach(() => {
    jest.useFakeTimers();
    registry = createRegistry();
  });
  afterEach(() => jest.useRealTimers());

  it('registers requests with fresh ids bound to their session', () => {
    expect(registry.register(1)).toBe('q-1');
    expect(registry.register(2)).toBe('q-2');
    expect(registry.sessionOf('q-1')).toBe(1);
    expect(registry.sessionOf('q-2')).toBe(2);
    expect(registry.sessionOf('q-3')).toBeUndefined();
    expect(registry.pendingCount()).toBe(2);
  });

  it('uses random ids by default', () => {
    const plain = new AskUserQuestionsRegistry();
    expect(plain.register(1)).not.toBe(plain.register(1));
  });

  describe('when the answers arrive in time', () => {
    it('resolves the wait with the answers and clears the timer', async () => {
      const id = registry.register(1);
      const waiting = registry.wait(id, 1_000);
      expect(jest.getTimerCount()).toBe(1);

      expect(registry.complete(id, { color: ['blue'] })).toBe(true);

      await expect(waiting).resolves.toEqual({ color: ['blue'] });
      expect(jest.getTimerCount()).toBe(0);
      expect(registry.pendingCount()).toBe(0);
      expect(registry.sessionOf(id)).toBeUndefined();
    });

    it('keeps answers that arrive before the wait starts', async () => {
      const id = registry.register(1);
      expect(registry.complete(id, ['early'])).toBe(true);
      expect(registry.pendingCount()).toBe(0);

      await expect(registry.wait(id, 1_000)).resolves.toEqual(['early']);
      expect(jest.getTimerCount()).toBe(0);
      // Handed out once: the entry is gone now.
      await expect(registry.wait(id, 1_000)).rejects.toBeInstanceOf(UnknownAskUserQuestionsRequestError);
    });

    it('refuses a second answer', async () => {
      const id = registry.register(1);
      const waiting = registry.wait(id, 1_000);
      registry.complete(id, 'first');
      expect(registry.complete(id, 'second')).toBe(false);
      await expect(waiting).resolves.toBe('first');
    });

    it('returns the same promise to a second wait without a second timer', async () => {
      const id = registry.register(1);
      const first = registry.wait(id, 1_000);
      const second = registry.wait(id, 50);
      expect(second).toBe(first);
      expect(jest.getTimerCount()).toBe(1);
      registry.complete(id, 'ok');
      await expect(first).resolves.toBe('ok');
    });
  });

  describe('when nobody answers', () => {
    it('rejects with AskUserQuestionsTimeoutError after the time limit and forgets the request', async () => {
      const id = registry.register(1);
      const waiting = registry.wait(id, 1_000);

      jest.advanceTimersByTime(999);
      expect(registry.pendingCount()).toBe(1);
      jest.advanceTimersByTime(1);

      await expect(waiting).rejects.toBeInstanceOf(AskUserQuestionsTimeoutError);
      await expect(waiting).rejects.toThrow('No answer to the questions within 1000 ms');
      expect(registry.pendingCount()).toBe(0);
      expect(jest.getTimerCount()).toBe(0);
      expect(registry.complete(id, 'late')).toBe(false);
    });
  });

  describe('cancel', () => {
    it('rejects the wait with AskUserQuestionsCancelledError carrying the reason', async () => {
      const id = registry.register(1);
      const waiting = registry.wait(id, 1_000);

      expect(registry.cancel(id, 'no client received the questions')).toBe(true);

      await expect(waiting).rejects.toBeInstanceOf(AskUserQuestionsCancelledError);
      await expect(waiting).rejects.toThrow('no client received the questions');
      expect(jest.getTimerCount()).toBe(0);
      expect(registry.pendingCount()).toBe(0);
      expect(registry.cancel(id)).toBe(false);
      expect(registry.complete(id, 'late')).toBe(false);
    });

    it('rejects a wait that starts after the cancellation', async () => {
      const id = registry.register(1);
      registry.cancel(id);
      await expect(registry.wait(id, 1_000)).rejects.toBeInstanceOf(AskUserQuestionsCancelledError);
      expect(jest.getTimerCount()).toBe(0);
    });

    it('returns false for an unknown id', () => {
      expect(registry.cancel('nope')).toBe(false);
      expect(registry.complete('__proto__', 1)).toBe(false);
    });
  });

  describe('cancelSession', () => {
    it('cancels only the unanswered requests of that session', async () => {
      const a = registry.register(1);
      const b = registry.register(1);
      const answered = registry.register(1);
      const other = registry.register(2);
      const waitA = registry.wait(a, 1_000);
      const waitB = registry.wait(b, 1_000);
      const waitOther = registry.wait(other, 1_000);
      registry.complete(answered, 'done');

      expect(registry.cancelSession(1)).toEqual([a, b]);

      await expect(waitA).rejects.toBeInstanceOf(AskUserQuestionsCancelledError);
      await expect(waitB).rejects.toBeInstanceOf(AskUserQuestionsCancelledError);
      expect(registry.sessionOf(other)).toBe(2);
      expect(registry.pendingCount()).toBe(1);
      expect(jest.getTimerCount()).toBe(1);

      registry.complete(other, 'fine');
      await expect(waitOther).resolves.toBe('fine');
      expect(jest.getTimerCount()).toBe(0);
    });

    it('drops answers of the session that nobody waited for', async () => {
      const answered = registry.register(1);
      registry.complete(answered, 'done');
      registry.cancelSession(1);
      await expect(registry.wait(answered, 1_000)).rejects.toBeInstanceOf(UnknownAskUserQuestionsRequestError);
    });

    it('returns an empty list for a session without requests', () => {
      expect(registry.cancelSession(99)).toEqual([]);
    });
  });

  it('rejects a wait on an unknown id', async () => {
    await expect(registry.wait('nope', 1_000)).rejects.toThrow('Unknown ask_user_questions request: nope');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('does not crash the process when a request is cancelled and never waited for', async () => {
    const id = registry.register(1);
    registry.cancel(id);
    // An unhandled rejection would fail the test run; give it a turn to surface.
    await Promise.resolve();
    expect(registry.pendingCount()).toBe(0);
  });
});
