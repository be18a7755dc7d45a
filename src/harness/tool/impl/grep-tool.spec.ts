import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { RE2JS } from 're2js';

import { ToolCallContext } from '../tool-call-context';
import { GrepTool, MAX_PROGRAM_SIZE } from './grep-tool';
import { configureGrepWorkers, type GrepWorkerSettings, liveGrepWorkers, liveGrepWorkersOf, setGrepWorkerLimit, waitingGrepMatchers } from './grep-worker';
import { failureMessage, successJson } from './testing/tool-return';

const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;

/**
 * Resolves once there are no more timers than `before`. A timer this code left would stay, so
 * the check fails after a while; one of jest's own (its status reporter, when it runs the specs
 * in this process) comes and goes, and is waited out.
 */
async function expectNoTimerLeft(before: number): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (timers() > before && Date.now() < deadline) await new Promise<void>((resolve) => setTimeout(resolve, 50));
  expect(timers()).toBeLessThanOrEqual(before);
}

describe('GrepTool', () => {
  let workspace: string;

  beforeEach(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-grep-'));
    const files: Record<string, string> = {
      'notes.md': 'TODO: write docs\nnothing here\n',
      'src/app.ts': 'export const app = 1;\n// TODO fix\r\nconst todo = 2;\n',
      'src/lib/util.ts': 'export function util() {}\n',
      'node_modules/dep/index.ts': 'TODO hidden\n',
    };
    for (const [file, text] of Object.entries(files)) {
      await fs.mkdir(path.dirname(path.join(workspace, file)), { recursive: true });
      await fs.writeFile(path.join(workspace, file), text);
    }
  });

  afterEach(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const grep = async (args: Record<string, unknown>, tool = new GrepTool()) => tool.execute(JSON.stringify(args), workspace);

  it('finds matching lines with file and 1-based line number, skipping node_modules', async () => {
    expect(successJson(await grep({ pattern: 'TODO' }))).toEqual({
      matches: [
        { file: 'notes.md', line: 1, text: 'TODO: write docs' },
        { file: 'src/app.ts', line: 2, text: '// TODO fix' },
      ],
      truncated: false,
    });
  });

  it('matches case-insensitively on request', async () => {
    expect(successJson(await grep({ pattern: 'todo fix' })).matches).toEqual([]);
    expect(successJson(await grep({ pattern: 'todo fix', ignore_case: true })).matches).toEqual([{ file: 'src/app.ts', line: 2, text: '// TODO fix' }]);
  });

  it('searches below `path`, which may also be a single file', async () => {
    expect(successJson(await grep({ pattern: 'export', path: 'src/lib' })).matches).toEqual([
      { file: 'src/lib/util.ts', line: 1, text: 'export function util() {}' },
    ]);
    expect(successJson(await grep({ pattern: 'nothing', path: 'notes.md' })).matches).toEqual([{ file: 'notes.md', line: 2, text: 'nothing here' }]);
  });

  it('filters files by a name glob at any depth, or by a path glob', async () => {
    expect((successJson(await grep({ pattern: 'export', glob: '*.ts' })).matches as unknown[]).length).toBe(2);
    expect(successJson(await grep({ pattern: 'TODO', glob: '*.md' })).matches).toEqual([{ file: 'notes.md', line: 1, text: 'TODO: write docs' }]);
    expect(successJson(await grep({ pattern: 'export', glob: 'src/lib/*.ts' })).matches).toEqual([
      { file: 'src/lib/util.ts', line: 1, text: 'export function util() {}' },
    ]);
  });

  it('skips binary files and files over the size cap', async () => {
    await fs.writeFile(path.join(workspace, 'blob.bin'), Buffer.concat([Buffer.from('TODO'), Buffer.from([0])]));
    await fs.writeFile(path.join(workspace, 'huge.txt'), `TODO ${'x'.repeat(100)}\n`);
    const result = successJson(await grep({ pattern: 'TODO', glob: '*.{bin,txt}' }, new GrepTool({ maxFileBytes: 50 })));
    expect(result).toEqual({ matches: [], truncated: false });
  });

  it('caps the matches and says truncated', async () => {
    expect(successJson(await grep({ pattern: 'e' }, new GrepTool({ maxMatches: 2 })))).toEqual({
      matches: [
        { file: 'notes.md', line: 1, text: 'TODO: write docs' },
        { file: 'notes.md', line: 2, text: 'nothing here' },
      ],
      truncated: true,
    });
  });

  it('is not truncated when the matches exactly fill the cap', async () => {
    expect(successJson(await grep({ pattern: 'TODO' }, new GrepTool({ maxMatches: 2 })))).toEqual({
      matches: [
        { file: 'notes.md', line: 1, text: 'TODO: write docs' },
        { file: 'src/app.ts', line: 2, text: '// TODO fix' },
      ],
      truncated: false,
    });
  });

  it('counts the cap across files', async () => {
    expect(successJson(await grep({ pattern: 'TODO|todo' }, new GrepTool({ maxMatches: 2 })))).toEqual({
      matches: [
        { file: 'notes.md', line: 1, text: 'TODO: write docs' },
        { file: 'src/app.ts', line: 2, text: '// TODO fix' },
      ],
      truncated: true,
    });
  });

  it('finds every match of a search that spans several batches of files, in walk order, and caps it across them', async () => {
    // 600 files (more than one batch of 256) plus one large enough to fill a batch by itself.
    await fs.mkdir(path.join(workspace, 'many'));
    for (let index = 0; index < 600; index++) await fs.writeFile(path.join(workspace, 'many', `f${String(index).padStart(3, '0')}.txt`), `line\nneedle ${index}\n`);
    await fs.writeFile(path.join(workspace, 'many', 'f300-big.txt'), `${'filler\n'.repeat(50_000)}needle big\n`);
    const all = successJson(await grep({ pattern: 'needle', path: 'many' }, new GrepTool({ maxMatches: 1_000 })));
    const matches = all.matches as Array<{ file: string; line: number; text: string }>;
    const expected = [...Array.from({ length: 600 }, (_, index) => `f${String(index).padStart(3, '0')}.txt`), 'f300-big.txt'].sort();
    expect(all.truncated).toBe(false);
    expect(matches.map((match) => match.file).sort()).toEqual(expected.map((file) => `many/${file}`));
    expect(matches.find((match) => match.file === 'many/f300-big.txt')).toEqual({ file: 'many/f300-big.txt', line: 50_001, text: 'needle big' });

    // A cap inside the second batch keeps the first matches of the walk, and says truncated.
    const capped = successJson(await grep({ pattern: 'needle', path: 'many' }, new GrepTool({ maxMatches: 300 })));
    expect(capped.truncated).toBe(true);
    expect(capped.matches).toEqual(matches.slice(0, 300));
    // Exactly all of them is not truncated.
    expect(successJson(await grep({ pattern: 'needle', path: 'many' }, new GrepTool({ maxMatches: 601 })))).toEqual(all);
  });

  it('cuts very long lines', async () => {
    const result = successJson(await grep({ pattern: 'export const' }, new GrepTool({ maxLineLength: 6 })));
    expect(result.matches).toEqual([{ file: 'src/app.ts', line: 1, text: 'export…' }]);
  });

  it.each([
    [{ pattern: '(unclosed' }, /^invalid regular expression '\(unclosed': /],
    [{ pattern: 'x', path: 'nowhere' }, /^no such file or directory: 'nowhere'$/],
    [{ pattern: 'x', glob: '{a' }, /unclosed/],
    [{ pattern: 'x', ignore_case: 'yes' }, /^'ignore_case' must be a boolean, got string$/],
  ])('%j → error', async (args, error) => {
    expect(failureMessage(await grep(args))).toMatch(error);
  });
});

describe('grep with patterns that make a backtracking engine stall', () => {
  let workspace: string;

  beforeAll(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-grep-redos-'));
    // Each of these lines makes V8's RegExp run for minutes (or longer) with the patterns below.
    await fs.writeFile(path.join(workspace, 'long.txt'), `${'a'.repeat(5_000)}!\n${'x'.repeat(5_000)}\nab\n`);
    await fs.mkdir(path.join(workspace, 'names'));
    await fs.writeFile(path.join(workspace, 'names', `${'a'.repeat(200)}.txt`), 'needle\n');
  });

  afterAll(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const grep = async (args: Record<string, unknown>) => new GrepTool().execute(JSON.stringify(args), workspace);

  it.each([
    ['(a+)+$', []],
    ['(a+)+!$', [1]],
    ['(a|a)*b', [3]],
    ['(x*)*y', []],
    ['(?:\\w+\\s?)+$', [2, 3]],
  ])('%s is answered correctly, in linear time', async (pattern, lines) => {
    const result = successJson(await grep({ pattern, path: 'long.txt' }));
    expect((result.matches as Array<{ line: number }>).map((match) => match.line)).toEqual(lines);
  });

  it('a glob filter with many stars is matched in linear time', async () => {
    const result = successJson(await grep({ pattern: 'needle', glob: `${'*a'.repeat(40)}*b` }));
    expect(result).toEqual({ matches: [], truncated: false });
    const hit = successJson(await grep({ pattern: 'needle', glob: `${'*a'.repeat(40)}*.txt` }));
    expect(hit.matches).toEqual([{ file: `names/${'a'.repeat(200)}.txt`, line: 1, text: 'needle' }]);
  });

  it.each([
    ['(?=a)b', /^invalid regular expression '\(\?=a\)b': .*\(\?=/],
    ['(a)\\1', /^invalid regular expression .*\\1/],
  ])('refuses %s (RE2 has no lookaround or backreferences) with an error naming it', async (pattern, error) => {
    expect(failureMessage(await grep({ pattern }))).toMatch(error);
  });
});

describe('grep with patterns that are slow even for a linear-time engine', () => {
  // Measured: this pattern costs re2js about 35 ms per KB of `a`, so ~35 s for the file below.
  const slowPattern = '(?:a?){1000}a{1000}[bc]';
  let workspace: string;

  beforeAll(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-grep-slow-'));
    await fs.writeFile(path.join(workspace, 'many-a.txt'), 'a'.repeat(1_000_000));
    await fs.writeFile(path.join(workspace, 'notes.md'), 'needle\n');
  });

  afterAll(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const grep = async (args: Record<string, unknown>, tool = new GrepTool()) => tool.execute(JSON.stringify(args), workspace);

  /** Runs `work` while a 10 ms interval ticks; returns its result and the longest gap between ticks. */
  async function withTicks<T>(work: () => Promise<T>): Promise<{ result: T; maxGapMs: number }> {
    let last = performance.now();
    let maxGapMs = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      maxGapMs = Math.max(maxGapMs, now - last);
      last = now;
    }, 10);
    try {
      const result = await work();
      maxGapMs = Math.max(maxGapMs, performance.now() - last);
      return { result, maxGapMs };
    } finally {
      clearInterval(ticker);
    }
  }

  it('ends at once when its call is cancelled, terminating its matching thread', async () => {
    const controller = new AbortController();
    const search = ToolCallContext.runScope({ callId: 'c1', signal: controller.signal }, () => grep({ pattern: slowPattern, path: 'many-a.txt' }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(liveGrepWorkers()).toBe(1);
    const cancelledAt = performance.now();
    controller.abort();
    expect(failureMessage(await search)).toBe('grep was cancelled before it finished');
    expect(performance.now() - cancelledAt).toBeLessThan(1_000);
    expect(liveGrepWorkers()).toBe(0);
  });

  it('is stopped at the deadline with an error, without blocking the event loop meanwhile', async () => {
    const started = performance.now();
    const { result, maxGapMs } = await withTicks(() => grep({ pattern: slowPattern, path: 'many-a.txt' }, new GrepTool({ timeoutMs: 300 })));
    expect(failureMessage(result)).toBe(
      'grep was stopped after its time limit of 300 ms; narrow the search with a simpler pattern, a smaller `path` or a `glob`',
    );
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(maxGapMs).toBeLessThan(200);
    expect(liveGrepWorkers()).toBe(0);
    expect(successJson(await grep({ pattern: 'needle' }))).toEqual({ matches: [{ file: 'notes.md', line: 1, text: 'needle' }], truncated: false });
  });

  it('refuses a pattern whose compiled program is over the size cap, naming both', async () => {
    const pattern = 'a{1000}b{1000}c{1000}d{1000}e{1000}';
    expect(RE2JS.compile(pattern).programSize()).toBe(5002);
    expect(failureMessage(await grep({ pattern }))).toBe(
      `regular expression '${pattern}' is too complex: it compiles to 5002 instructions, more than the limit of ${MAX_PROGRAM_SIZE}; ` +
        'use a simpler pattern (large counted repetitions such as {1000} are costly)',
    );
    expect(liveGrepWorkers()).toBe(0);
  });

  it('accepts the slow pattern, which is under the cap, and answers it when the input is short', async () => {
    expect(RE2JS.compile(slowPattern).programSize()).toBeLessThanOrEqual(MAX_PROGRAM_SIZE);
    expect(successJson(await grep({ pattern: slowPattern, path: 'notes.md' }))).toEqual({ matches: [], truncated: false });
  });

  it('reports an error thrown inside the matching thread as a failure', async () => {
    // The thread compiles the pattern itself; make the check in this thread pass for one it refuses.
    const compile = RE2JS.compile.bind(RE2JS);
    const spy = jest.spyOn(RE2JS, 'compile').mockImplementationOnce(() => compile('x'));
    try {
      expect(failureMessage(await grep({ pattern: '(unclosed' }))).toMatch(/^grep failed: .*missing closing \)/);
    } finally {
      spy.mockRestore();
    }
    expect(liveGrepWorkers()).toBe(0);
  });

  it('leaves no thread or timer behind, whatever the outcome', async () => {
    const timersBefore = timers();
    // Each call has a deadline and clears it; a loaded machine must not turn the quick ones into
    // time-outs, so only the slow pattern gets the short limit.
    const quick = new GrepTool({ timeoutMs: 30_000 });
    const short = new GrepTool({ timeoutMs: 300 });
    for (let i = 0; i < 5; i++) {
      expect(successJson(await grep({ pattern: 'needle' }, quick)).matches).toHaveLength(1);
      expect(successJson(await grep({ pattern: 'nothing-matches-this' }, quick)).matches).toEqual([]);
      expect(failureMessage(await grep({ pattern: '(unclosed' }, quick))).toMatch(/^invalid regular expression/);
      expect(failureMessage(await grep({ pattern: 'x', path: 'nowhere' }, quick))).toMatch(/^no such file/);
      expect(failureMessage(await grep({ pattern: 'a{1000}b{1000}c{1000}d{1000}e{1000}' }, quick))).toMatch(/too complex/);
      expect(liveGrepWorkers()).toBe(0);
    }
    expect(failureMessage(await grep({ pattern: slowPattern, path: 'many-a.txt' }, short))).toMatch(/time limit of 300 ms/);
    expect(liveGrepWorkers()).toBe(0);
    // No growth: a timer of an earlier test may end meanwhile, none of these calls may leave one.
    await expectNoTimerLeft(timersBefore);
  });
});

describe('grep calls sharing a limited number of matching threads', () => {
  // About 35 ms per KB of `a` with re2js: ~100 ms for the short file, ~35 s for the long one.
  const slowPattern = '(?:a?){1000}a{1000}[bc]';
  const deadlineError = (ms: number) =>
    `grep was stopped after its time limit of ${ms} ms; narrow the search with a simpler pattern, a smaller \`path\` or a \`glob\``;
  const busyError = (ms: number) =>
    `grep was stopped after its time limit of ${ms} ms while waiting for a free search thread: the server is busy with other searches; try again shortly`;
  let workspace: string;
  let previous: GrepWorkerSettings;

  beforeAll(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-grep-pool-'));
    await fs.writeFile(path.join(workspace, 'many-a.txt'), 'a'.repeat(1_000_000));
    await fs.writeFile(path.join(workspace, 'few-a.txt'), 'a'.repeat(3_000));
    await fs.writeFile(path.join(workspace, 'lines.txt'), '\n'.repeat(2_000_000));
    await fs.writeFile(path.join(workspace, 'notes.md'), 'needle\n');
  });

  afterAll(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  beforeEach(() => {
    // Calls without a session form one group: give it the whole pool, as before sessions counted.
    previous = configureGrepWorkers({ limit: 2, perSessionLimit: 2, extraLimit: 0 });
  });

  afterEach(() => {
    configureGrepWorkers(previous);
  });

  const grep = async (args: Record<string, unknown>, tool = new GrepTool()) => tool.execute(JSON.stringify(args), workspace);

  /** Runs `work` while sampling `liveGrepWorkers()` every millisecond; returns its result and the highest count seen. */
  async function withThreadCount<T>(work: () => Promise<T>): Promise<{ result: T; maxLive: number }> {
    let maxLive = liveGrepWorkers();
    const sampler = setInterval(() => (maxLive = Math.max(maxLive, liveGrepWorkers())), 1);
    try {
      const result = await work();
      return { result, maxLive };
    } finally {
      clearInterval(sampler);
    }
  }

  const expectFastGrepWorks = async () => {
    expect(successJson(await grep({ pattern: 'needle', path: 'notes.md' }))).toEqual({
      matches: [{ file: 'notes.md', line: 1, text: 'needle' }],
      truncated: false,
    });
  };

  it('runs at most `limit` threads for many concurrent calls, and answers them all', async () => {
    const timersBefore = timers();
    const tool = new GrepTool({ timeoutMs: 20_000 });
    const { result, maxLive } = await withThreadCount(() =>
      Promise.all(Array.from({ length: 6 }, () => grep({ pattern: slowPattern, path: 'few-a.txt' }, tool))),
    );
    expect(result.map(successJson)).toEqual(Array.from({ length: 6 }, () => ({ matches: [], truncated: false })));
    expect(maxLive).toBe(2);
    expect(liveGrepWorkers()).toBe(0);
    expect(waitingGrepMatchers()).toBe(0);
    await expectNoTimerLeft(timersBefore);
  });

  it('runs at most `limit` threads when concurrent calls run into their deadlines, running or waiting', async () => {
    const timersBefore = timers();
    const deadlines = [200, 300, 400, 500, 600, 700];
    const { result, maxLive } = await withThreadCount(() =>
      Promise.all(deadlines.map((timeoutMs) => grep({ pattern: slowPattern, path: 'many-a.txt' }, new GrepTool({ timeoutMs })))),
    );
    // Each ran into its deadline, matching or still waiting for a thread — and was told which.
    const errors = result.map(failureMessage);
    expect(errors).toEqual(deadlines.map((ms) => expect.stringMatching(new RegExp(`^grep was stopped after its time limit of ${ms} ms`))));
    for (const [index, error] of errors.entries()) {
      expect([deadlineError(deadlines[index]), busyError(deadlines[index])]).toContain(error);
    }
    expect(maxLive).toBeLessThanOrEqual(2);
    expect(liveGrepWorkers()).toBe(0);
    expect(waitingGrepMatchers()).toBe(0);
    await expectNoTimerLeft(timersBefore);
    await expectFastGrepWorks();
  });

  it('answers a call whose deadline passes while it waits with a "server busy" error, without starting a thread', async () => {
    setGrepWorkerLimit(1);
    const running = grep({ pattern: slowPattern, path: 'many-a.txt' }, new GrepTool({ timeoutMs: 2_000 }));
    try {
      while (liveGrepWorkers() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      const started = performance.now();
      const waiter = new GrepTool({ timeoutMs: 200 });
      const { result, maxLive } = await withThreadCount(() => grep({ pattern: 'needle', path: 'notes.md' }, waiter));
      expect(failureMessage(result)).toBe(busyError(200));
      expect(performance.now() - started).toBeLessThan(1_500);
      // Only the running call's thread exists, and the waiting call has left the queue.
      expect(maxLive).toBe(1);
      expect(liveGrepWorkers()).toBe(1);
      expect(waitingGrepMatchers()).toBe(0);
    } finally {
      expect(failureMessage(await running)).toBe(deadlineError(2_000));
    }
    expect(liveGrepWorkers()).toBe(0);
  });

  it('ends a call whose thread exceeds its heap limit with a failure, and frees the thread', async () => {
    const tool = new GrepTool({ maxWorkerHeapMb: 8, maxFileBytes: 4 * 1024 * 1024 });
    expect(failureMessage(await grep({ pattern: 'x', path: 'lines.txt' }, tool))).toBe(
      'grep failed: Worker terminated due to reaching memory limit: JS heap out of memory',
    );
    expect(liveGrepWorkers()).toBe(0);
  });

  it('frees the slot after a success, a failure, a deadline and a crash, so a later call runs even with a limit of 1', async () => {
    setGrepWorkerLimit(1);
    await expectFastGrepWorks();
    await expectFastGrepWorks();

    const compile = RE2JS.compile.bind(RE2JS);
    const spy = jest.spyOn(RE2JS, 'compile').mockImplementationOnce(() => compile('x'));
    try {
      expect(failureMessage(await grep({ pattern: '(unclosed' }))).toMatch(/^grep failed: .*missing closing \)/);
    } finally {
      spy.mockRestore();
    }
    await expectFastGrepWorks();

    const short = new GrepTool({ timeoutMs: 200 });
    expect(failureMessage(await grep({ pattern: slowPattern, path: 'many-a.txt' }, short))).toBe(deadlineError(200));
    await expectFastGrepWorks();

    const crashing = new GrepTool({ maxWorkerHeapMb: 8, maxFileBytes: 4 * 1024 * 1024 });
    expect(failureMessage(await grep({ pattern: 'x', path: 'lines.txt' }, crashing))).toMatch(/^grep failed: .*memory limit/);
    await expectFastGrepWorks();

    expect(liveGrepWorkers()).toBe(0);
    expect(waitingGrepMatchers()).toBe(0);
  });
});

describe('grep calls of different sessions sharing the matching threads', () => {
  // About 35–110 ms per KB of `a` with re2js, depending on the machine: far past the deadlines below.
  const slowPattern = '(?:a?){1000}a{1000}[bc]';
  let workspace: string;
  let previous: GrepWorkerSettings;

  beforeAll(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-grep-sessions-'));
    await fs.writeFile(path.join(workspace, 'many-a.txt'), 'a'.repeat(1_000_000));
    await fs.writeFile(path.join(workspace, 'notes.md'), 'needle\n');
  });

  afterAll(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  beforeEach(() => {
    previous = configureGrepWorkers({ limit: 1, perSessionLimit: 1, extraLimit: 1 });
  });

  afterEach(() => {
    configureGrepWorkers(previous);
  });

  /** A call as the dispatcher makes it: session id, user id, workspace. */
  const grepAs = async (sessionId: number, args: Record<string, unknown>, tool: GrepTool) => tool.execute(JSON.stringify(args), sessionId, 1, workspace);

  async function until(condition: () => boolean): Promise<void> {
    while (!condition()) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  it("answers one session's quick search while another session's slow searches hold the pool and queue", async () => {
    const tool = new GrepTool({ timeoutMs: 3_000 });
    // The search that takes the thread has a later deadline than the two that queue behind it, so
    // theirs surely passes while they still wait (a thread freed at the same moment would otherwise
    // go to one of them just before its own deadline).
    const holder = new GrepTool({ timeoutMs: 4_000 });
    let slowSettled = 0;
    const settled = <T>(call: Promise<T>) => call.finally(() => slowSettled++);
    const slow = [settled(grepAs(7, { pattern: slowPattern, path: 'many-a.txt' }, holder))];
    await until(() => liveGrepWorkersOf(7) === 1);
    slow.push(...Array.from({ length: 2 }, () => settled(grepAs(7, { pattern: slowPattern, path: 'many-a.txt' }, tool))));
    await until(() => waitingGrepMatchers() === 2);

    expect(successJson(await grepAs(8, { pattern: 'needle' }, tool))).toEqual({ matches: [{ file: 'notes.md', line: 1, text: 'needle' }], truncated: false });
    // Session 7's searches were all still running or waiting when session 8 got its answer.
    expect(slowSettled).toBe(0);
    expect(liveGrepWorkersOf(7)).toBe(1);
    expect(waitingGrepMatchers()).toBe(2);

    // Whichever got the thread ran into the deadline; the two behind it were told the server was busy.
    const errors = (await Promise.all(slow)).map(failureMessage);
    expect(errors.filter((error) => error.startsWith('grep was stopped after its time limit of 4000 ms; narrow the search'))).toHaveLength(1);
    expect(errors.filter((error) => error.startsWith('grep was stopped after its time limit of 3000 ms while waiting'))).toHaveLength(2);
    expect(liveGrepWorkers()).toBe(0);
    expect(waitingGrepMatchers()).toBe(0);
  });

  it('counts calls made without a session as one more session', async () => {
    const tool = new GrepTool({ timeoutMs: 3_000 });
    const slow = grepAs(7, { pattern: slowPattern, path: 'many-a.txt' }, tool);
    await until(() => liveGrepWorkersOf(7) === 1);
    // No session: the anonymous group, which holds nothing, takes the extra thread.
    expect(successJson(await tool.execute(JSON.stringify({ pattern: 'needle' }), workspace)).matches).toHaveLength(1);
    expect(liveGrepWorkersOf(null)).toBe(0);
    expect(failureMessage(await slow)).toMatch(/time limit of 3000 ms; narrow/);
  });
});

describe('grep over an 800-deep tree with a file in every directory', () => {
  let workspace: string;

  beforeAll(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-grep-deep-'));
    let directory = workspace;
    for (let level = 0; level < 800; level++) {
      directory = path.join(directory, 'd');
      await fs.mkdir(directory);
      await fs.writeFile(path.join(directory, 'f.txt'), `level ${level}\n`);
    }
  });

  afterAll(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  it('reads every file, each opened from its directory rather than from the root', async () => {
    // Opening every file from the root took 320 000 opens for this tree, past this test's timeout.
    const result = successJson(await new GrepTool({ maxMatches: 1_000 }).execute(JSON.stringify({ pattern: '^level (0|799)$' }), workspace)) as {
      matches: Array<{ file: string; line: number; text: string }>;
    };
    expect(result.matches.map((match) => match.text)).toEqual(['level 0', 'level 799']);
    expect(result.matches[1].file).toBe(`${Array.from({ length: 800 }, () => 'd').join('/')}/f.txt`);
  });
});
