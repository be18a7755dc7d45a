import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { ToolCallContext } from '../tool-call-context';
import { GlobTool } from './glob-tool';
import { failureMessage, successJson } from './testing/tool-return';

describe('GlobTool', () => {
  let workspace: string;

  beforeEach(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-glob-'));
    const files = ['README.md', 'package.json', 'src/index.ts', 'src/lib/util.ts', 'src/lib/util.spec.ts', 'test/app.e2e.ts'];
    for (const file of [...files, 'node_modules/dep/index.ts', '.git/config.ts']) {
      await fs.mkdir(path.dirname(path.join(workspace, file)), { recursive: true });
      await fs.writeFile(path.join(workspace, file), '');
    }
  });

  afterEach(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const glob = (args: Record<string, unknown>, tool = new GlobTool()) => tool.execute(JSON.stringify(args), workspace);

  it('lists matching files sorted, skipping node_modules and .git', async () => {
    expect(successJson(await glob({ pattern: '**/*.ts' }))).toEqual({
      files: ['src/index.ts', 'src/lib/util.spec.ts', 'src/lib/util.ts', 'test/app.e2e.ts'],
      truncated: false,
    });
  });

  it('matches a single-segment pattern at the top level only', async () => {
    expect(successJson(await glob({ pattern: '*.{md,json}' }))).toEqual({ files: ['README.md', 'package.json'], truncated: false });
  });

  it('matches relative to `path` and answers paths relative to the workspace', async () => {
    expect(successJson(await glob({ pattern: '*.ts', path: 'src/lib' }))).toEqual({
      files: ['src/lib/util.spec.ts', 'src/lib/util.ts'],
      truncated: false,
    });
  });

  it('includes a symlinked file whose target is inside the workspace', async () => {
    await fs.symlink('src/index.ts', path.join(workspace, 'entry.ts'));
    expect(successJson(await glob({ pattern: '*.ts' })).files).toEqual(['entry.ts']);
  });

  it('caps the number of results and says so', async () => {
    expect(successJson(await glob({ pattern: '**/*.ts' }, new GlobTool({ maxResults: 2 })))).toEqual({
      files: ['src/index.ts', 'src/lib/util.spec.ts'],
      truncated: true,
    });
  });

  it('says truncated when the walk reaches its entry limit', async () => {
    expect(successJson(await glob({ pattern: '**' }, new GlobTool({ maxEntries: 3 })))).toEqual(expect.objectContaining({ truncated: true }));
  });

  it('returns an empty list when nothing matches', async () => {
    expect(successJson(await glob({ pattern: '**/*.py' }))).toEqual({ files: [], truncated: false });
  });

  it.each([
    [{ pattern: '*.ts', path: 'README.md' }, "'README.md' is not a directory"],
    [{ pattern: '*.ts', path: 'nowhere' }, "no such file or directory: 'nowhere'"],
    [{ pattern: '../*' }, "glob pattern '../*' must not contain '..'"],
    [{ pattern: '{a,b' }, "glob pattern '{a,b' has an unclosed '{'"],
  ])('%j → error', async (args, error) => {
    expect(failureMessage(await glob(args))).toBe(error);
  });

  describe('when the pattern starts with plain directories', () => {
    it('walks only below them', async () => {
      // Three entries would not even cover the workspace root; src/lib holds two.
      expect(successJson(await glob({ pattern: 'src/lib/*.ts' }, new GlobTool({ maxEntries: 3 })))).toEqual({
        files: ['src/lib/util.spec.ts', 'src/lib/util.ts'],
        truncated: false,
      });
    });

    it('still never enters node_modules, .git or a link to a directory', async () => {
      await fs.symlink(path.join(workspace, 'src'), path.join(workspace, 'src-link'));
      expect(successJson(await glob({ pattern: 'node_modules/**' }))).toEqual({ files: [], truncated: false });
      expect(successJson(await glob({ pattern: '.git/*' }))).toEqual({ files: [], truncated: false });
      expect(successJson(await glob({ pattern: 'src-link/*.ts' }))).toEqual({ files: [], truncated: false });
      expect(successJson(await glob({ pattern: 'missing/*.ts' }))).toEqual({ files: [], truncated: false });
    });
  });

  describe('when its time runs out', () => {
    const deadlineError = (ms: number) =>
      `glob was stopped after its time limit of ${ms} ms; narrow the search: start the pattern with a directory (e.g. \`src/**/*.ts\`) or give a smaller \`path\``;

    it('stops walking and answers with an error asking to narrow the search', async () => {
      // A clock that moves one millisecond each time the walk looks at it.
      let readings = 0;
      const tool = new GlobTool({ timeoutMs: 5, now: () => readings++ });
      expect(failureMessage(await glob({ pattern: '**/*.ts' }, tool))).toBe(deadlineError(5));
      // It stopped on the sixth reading, long before looking at every entry.
      expect(readings).toBe(6);
    });

    it('answers normally when the walk ends before the deadline', async () => {
      const tool = new GlobTool({ timeoutMs: 1, now: () => 0 });
      expect(successJson(await glob({ pattern: '**/*.ts' }, tool)).files).toHaveLength(4);
    });

    it('defaults to 30 s, as grep', async () => {
      let readings = 0;
      const clock = [0, 29_999, 30_000];
      const tool = new GlobTool({ now: () => clock[Math.min(readings++, clock.length - 1)] });
      expect(failureMessage(await glob({ pattern: '**' }, tool))).toBe(deadlineError(30_000));
      expect(readings).toBe(3);
    });
  });
});

describe('glob over an 800-deep tree (as write_file makes them)', () => {
  const chain = Array.from({ length: 800 }, () => 'd').join('/');
  let workspace: string;

  beforeAll(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-glob-deep-'));
    await fs.mkdir(path.join(workspace, chain), { recursive: true });
    await fs.writeFile(path.join(workspace, chain, 'bottom.txt'), '');
  });

  afterAll(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  it('finds the file at the bottom, with its deadline checked all the way down', async () => {
    // Opening each directory from the root took 47 s here (past this test's timeout); the walk
    // now opens each once (see workspace-file-walk.spec.ts). The clock is read at every step.
    let readings = 0;
    const tool = new GlobTool({ now: () => (readings++, 0) });
    expect(successJson(await tool.execute(JSON.stringify({ pattern: '**' }), workspace))).toEqual({ files: [`${chain}/bottom.txt`], truncated: false });
    expect(readings).toBeGreaterThan(800);
  });
});

describe('glob of a cancelled call', () => {
  it('walks nothing and says it was cancelled', async () => {
    const workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-glob-cancel-'));
    try {
      await fs.writeFile(path.join(workspace, 'a.txt'), 'a');
      const controller = new AbortController();
      controller.abort();
      const result = await ToolCallContext.runScope({ callId: 'c1', signal: controller.signal }, () =>
        new GlobTool().execute(JSON.stringify({ pattern: '**' }), workspace),
      );
      expect(failureMessage(result)).toBe('glob was cancelled before it finished');
    } finally {
      await fs.rm(workspace, { recursive: true, force: true });
    }
  });
});
