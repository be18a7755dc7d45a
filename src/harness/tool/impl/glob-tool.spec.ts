import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { GlobTool } from './glob-tool';

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

  const glob = async (args: Record<string, unknown>, tool = new GlobTool()) =>
    JSON.parse(await tool.execute(JSON.stringify(args), workspace)) as Record<string, unknown>;

  it('lists matching files sorted, skipping node_modules and .git', async () => {
    expect(await glob({ pattern: '**/*.ts' })).toEqual({
      files: ['src/index.ts', 'src/lib/util.spec.ts', 'src/lib/util.ts', 'test/app.e2e.ts'],
      truncated: false,
    });
  });

  it('matches a single-segment pattern at the top level only', async () => {
    expect(await glob({ pattern: '*.{md,json}' })).toEqual({ files: ['README.md', 'package.json'], truncated: false });
  });

  it('matches relative to `path` and answers paths relative to the workspace', async () => {
    expect(await glob({ pattern: '*.ts', path: 'src/lib' })).toEqual({
      files: ['src/lib/util.spec.ts', 'src/lib/util.ts'],
      truncated: false,
    });
  });

  it('includes a symlinked file whose target is inside the workspace', async () => {
    await fs.symlink('src/index.ts', path.join(workspace, 'entry.ts'));
    expect((await glob({ pattern: '*.ts' })).files).toEqual(['entry.ts']);
  });

  it('caps the number of results and says so', async () => {
    expect(await glob({ pattern: '**/*.ts' }, new GlobTool({ maxResults: 2 }))).toEqual({
      files: ['src/index.ts', 'src/lib/util.spec.ts'],
      truncated: true,
    });
  });

  it('says truncated when the walk reaches its entry limit', async () => {
    expect(await glob({ pattern: '**' }, new GlobTool({ maxEntries: 3 }))).toEqual(expect.objectContaining({ truncated: true }));
  });

  it('returns an empty list when nothing matches', async () => {
    expect(await glob({ pattern: '**/*.py' })).toEqual({ files: [], truncated: false });
  });

  it.each([
    [{ pattern: '*.ts', path: 'README.md' }, "'README.md' is not a directory"],
    [{ pattern: '*.ts', path: 'nowhere' }, "no such file or directory: 'nowhere'"],
    [{ pattern: '../*' }, "glob pattern '../*' must not contain '..'"],
    [{ pattern: '{a,b' }, "glob pattern '{a,b' has an unclosed '{'"],
  ])('%j → error', async (args, error) => {
    expect(await glob(args)).toEqual({ error });
  });
});
