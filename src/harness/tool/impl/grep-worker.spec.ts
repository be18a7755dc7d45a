import { RE2JS } from 're2js';

import { GrepLineMatcher, liveGrepWorkers } from './grep-worker';

describe('GrepLineMatcher', () => {
  it('answers the indices of the matching lines, split on \\n or \\r\\n, at most `limit` of them', async () => {
    const matcher = new GrepLineMatcher('to+do', RE2JS.CASE_INSENSITIVE);
    try {
      const text = 'TODO one\r\nnone\ntoodo two\r\nx\ntodo three';
      expect(await matcher.matchingLines(text, 10)).toEqual([0, 2, 4]);
      expect(await matcher.matchingLines(text, 2)).toEqual([0, 2]);
      expect(await matcher.matchingLines('', 10)).toEqual([]);
    } finally {
      await matcher.close();
    }
    expect(liveGrepWorkers()).toBe(0);
  });

  it('starts no thread until the first request', async () => {
    const matcher = new GrepLineMatcher('x', 0);
    expect(liveGrepWorkers()).toBe(0);
    await matcher.close();
    await expect(matcher.matchingLines('x', 1)).rejects.toThrow('the grep matcher was closed');
    expect(liveGrepWorkers()).toBe(0);
  });

  it('rejects with the error the thread throws when it cannot compile the pattern', async () => {
    const matcher = new GrepLineMatcher('(unclosed', 0);
    await expect(matcher.matchingLines('x', 1)).rejects.toThrow(/missing closing \)/);
    await expect(matcher.matchingLines('x', 1)).rejects.toThrow(/missing closing \)/);
    await matcher.close();
    expect(liveGrepWorkers()).toBe(0);
  });

  it('rejects one request whose matching throws, and keeps answering the next', async () => {
    const matcher = new GrepLineMatcher('x', 0);
    try {
      await expect(matcher.matchingLines(42 as unknown as string, 1)).rejects.toThrow(/split is not a function/);
      expect(await matcher.matchingLines('a\nx', 1)).toEqual([1]);
    } finally {
      await matcher.close();
    }
  });

  it('rejects a pending request when closed, and the thread has exited once close resolves', async () => {
    const matcher = new GrepLineMatcher('(?:a?){1000}a{1000}[bc]', 0);
    const pending = matcher.matchingLines('a'.repeat(200_000), 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(liveGrepWorkers()).toBe(1);
    const rejected = expect(pending).rejects.toThrow('the grep matcher was closed');
    await matcher.close();
    await rejected;
    expect(liveGrepWorkers()).toBe(0);
  });
});
