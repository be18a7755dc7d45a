import * as fs from 'node:fs/promises';
import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { type WalkedFile, WorkspaceFileWalk, type WorkspaceFileWalkOptions } from './workspace-file-walk';

/** Where this spec's scratch trees are made (`harness-walk-…`, `harness-walk-deep-…`). */
const SCRATCH_PREFIX = path.join(realpathSync(os.tmpdir()), 'harness-walk-');
/**
 * The process's descriptors open on this spec's scratch trees. Only those: other threads of the
 * test process (a pooled grep thread of an earlier spec stopping, say) open and close their own.
 */
const openDescriptors = () =>
  readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(SCRATCH_PREFIX);
    } catch {
      return false; // closed meanwhile
    }
  }).length;

async function writeFiles(root: string, files: string[]): Promise<void> {
  for (const file of files) {
    await fs.mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await fs.writeFile(path.join(root, file), file);
  }
}

describe('WorkspaceFileWalk', () => {
  let sandbox: string;
  let workspace: string;

  beforeEach(async () => {
    sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'harness-walk-')));
    workspace = path.join(sandbox, 'ws');
    await fs.mkdir(workspace);
  });

  afterEach(async () => {
    await fs.rm(sandbox, { recursive: true, force: true });
  });

  /** The files the walk yields, as `relativePath` (and `relativeToStart` when it differs). */
  async function walked(start = '.', options: WorkspaceFileWalkOptions = {}, within = ''): Promise<{ files: string[]; walk: WorkspaceFileWalk }> {
    const walk = new WorkspaceFileWalk(workspace, options);
    const files: string[] = [];
    for await (const file of walk.files(start, within)) {
      files.push(file.relativePath === file.relativeToStart ? file.relativePath : `${file.relativePath} (${file.relativeToStart})`);
    }
    return { files, walk };
  }

  it("yields a directory's files in name order before its subdirectories, skipping node_modules and .git", async () => {
    await writeFiles(workspace, ['b/z.txt', 'b/a/y.txt', 'z.txt', 'a.txt', 'a/c/x.txt', 'a/b.txt', 'node_modules/m.txt', 'a/.git/g.txt']);
    expect((await walked()).files).toEqual(['a.txt', 'z.txt', 'a/b.txt', 'a/c/x.txt', 'b/z.txt', 'b/a/y.txt']);
  });

  it('gives paths relative to the workspace and to the start directory', async () => {
    await writeFiles(workspace, ['src/lib/util.ts', 'src/index.ts']);
    expect((await walked('src')).files).toEqual(['src/index.ts (index.ts)', 'src/lib/util.ts (lib/util.ts)']);
  });

  it('goes down to `within` without listing the directories on the way, paths still relative to the start', async () => {
    await writeFiles(workspace, ['src/lib/util.ts', 'src/index.ts', 'src/lib/deep/x.ts', 'top.ts']);
    const { files, walk } = await walked('src', {}, 'lib');
    expect(files).toEqual(['src/lib/util.ts (lib/util.ts)', 'src/lib/deep/x.ts (lib/deep/x.ts)']);
    expect(walk.directoriesOpened).toBe(3);
    expect((await walked('.', {}, 'node_modules')).files).toEqual([]);
    expect((await walked('.', {}, 'missing/dir')).files).toEqual([]);
  });

  it('does not enter a link to a directory, as a subdirectory or as `within`', async () => {
    await writeFiles(workspace, ['real/f.txt']);
    await fs.symlink(path.join(workspace, 'real'), path.join(workspace, 'link'));
    expect((await walked()).files).toEqual(['real/f.txt']);
    expect((await walked('.', {}, 'link')).files).toEqual([]);
  });

  it('yields a link to a regular file inside the workspace, opening its target; not one leading outside', async () => {
    await writeFiles(workspace, ['target.txt']);
    await writeFiles(sandbox, ['outside.txt']);
    await fs.symlink(path.join(workspace, 'target.txt'), path.join(workspace, 'inside-link.txt'));
    await fs.symlink(path.join(sandbox, 'outside.txt'), path.join(workspace, 'outside-link.txt'));
    const walk = new WorkspaceFileWalk(workspace);
    const contents: Record<string, string> = {};
    for await (const file of walk.files('.')) contents[file.relativePath] = await readThrough(file);
    expect(contents).toEqual({ 'inside-link.txt': 'target.txt', 'target.txt': 'target.txt' });
  });

  describe('when more directories with subdirectories pending are nested than it may hold open', () => {
    // A comb: each level holds `next/` (walked first) and `side/` with one file.
    const levels = 30;
    let expected: string[];

    beforeEach(async () => {
      const files: string[] = [];
      let prefix = '';
      for (let level = 0; level < levels; level++) {
        files.push(`${prefix}side/f${level}.txt`);
        prefix += 'next/';
      }
      await writeFiles(workspace, files);
      expected = (await walked()).files;
    });

    it('yields the same files in the same order, reopening what it closed, within its descriptor limit', async () => {
      expect(expected).toHaveLength(levels);
      expect(expected[0]).toBe(`${'next/'.repeat(levels - 1)}side/f${levels - 1}.txt`);
      const before = openDescriptors();
      let most = 0;
      const walk = new WorkspaceFileWalk(workspace, {
        maxOpenDirectories: 4,
        shouldStop: () => ((most = Math.max(most, openDescriptors() - before)), false),
      });
      const files: string[] = [];
      for await (const file of walk.files('.')) files.push(file.relativePath);
      expect(files).toEqual(expected);
      // The limit, the directory being listed and the one being opened.
      expect(most).toBeLessThanOrEqual(4 + 2);
      expect(walk.directoriesOpened).toBeGreaterThan(2 * levels);
      expect(openDescriptors()).toBe(before);
    });
  });

  describe('when it is stopped', () => {
    beforeEach(async () => {
      await writeFiles(workspace, ['a/1.txt', 'a/2.txt', 'b/3.txt', 'c/4.txt']);
    });

    it('ends once `shouldStop` says so, marks itself stopped and closes what it opened', async () => {
      const before = openDescriptors();
      let asked = 0;
      const { files, walk } = await walked('.', { shouldStop: () => ++asked > 6 });
      expect(files).toEqual(['a/1.txt']);
      expect(walk.stopped).toBe(true);
      expect(walk.limitReached).toBe(false);
      expect(openDescriptors()).toBe(before);
    });

    it('ends after `maxEntries` entries with `limitReached`', async () => {
      const { files, walk } = await walked('.', { maxEntries: 5 });
      expect(files).toEqual(['a/1.txt', 'a/2.txt']);
      expect(walk.limitReached).toBe(true);
      expect(walk.stopped).toBe(false);
    });

    it('refuses to open a file once the walk has closed its directory', async () => {
      const found: WalkedFile[] = [];
      for await (const file of new WorkspaceFileWalk(workspace).files('.')) found.push(file);
      expect(() => found[0].open()).toThrow(expect.objectContaining({ code: 'EBADF' }));
    });

    it('closes what it opened when the caller stops iterating', async () => {
      const before = openDescriptors();
      const walk = new WorkspaceFileWalk(workspace);
      for await (const file of walk.files('.')) {
        expect(file.relativePath).toBe('a/1.txt');
        break;
      }
      expect(openDescriptors()).toBe(before);
    });
  });

  describe('when the workspace changes while it walks', () => {
    beforeEach(async () => {
      await writeFiles(workspace, ['a/x.txt', 'b/y.txt']);
      await writeFiles(sandbox, ['outside/y.txt', 'outside/secret.txt']);
    });

    it('does not enter a directory swapped for a link after it was listed', async () => {
      const files: string[] = [];
      for await (const file of new WorkspaceFileWalk(workspace).files('.')) {
        files.push(file.relativePath);
        if (file.relativePath === 'a/x.txt') {
          await fs.rename(path.join(workspace, 'b'), path.join(sandbox, 'old-b'));
          await fs.symlink(path.join(sandbox, 'outside'), path.join(workspace, 'b'));
        }
      }
      expect(files).toEqual(['a/x.txt']);
    });

    it('does not open a file swapped for a link after it was listed', async () => {
      for await (const file of new WorkspaceFileWalk(workspace).files('.')) {
        if (file.relativePath !== 'a/x.txt') continue;
        await fs.rm(path.join(workspace, 'a', 'x.txt'));
        await fs.symlink(path.join(sandbox, 'outside', 'secret.txt'), path.join(workspace, 'a', 'x.txt'));
        expect(() => file.open()).toThrow(expect.objectContaining({ code: 'ELOOP' }));
      }
    });
  });
});

describe('WorkspaceFileWalk over a deep tree', () => {
  const depth = 800;
  const chain = Array.from({ length: depth }, () => 'd').join('/');
  let workspace: string;

  beforeAll(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-walk-deep-'));
    await fs.mkdir(path.join(workspace, chain), { recursive: true });
    await fs.writeFile(path.join(workspace, chain, 'bottom.txt'), 'found');
  });

  afterAll(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  it('opens each directory once, from its parent', async () => {
    const walk = new WorkspaceFileWalk(workspace);
    const files: string[] = [];
    for await (const file of walk.files('.')) files.push(file.relativePath);
    expect(files).toEqual([`${chain}/bottom.txt`]);
    // The root and the 800 directories below it: opening each from the root took 320 400 opens.
    expect(walk.directoriesOpened).toBe(depth + 1);
  });

  it('holds only a few descriptors while it walks a chain', async () => {
    const before = openDescriptors();
    let most = 0;
    const walk = new WorkspaceFileWalk(workspace, { shouldStop: () => ((most = Math.max(most, openDescriptors() - before)), false) });
    for await (const file of walk.files('.')) expect(readThrough(file)).toBe('found');
    expect(most).toBeLessThanOrEqual(3);
    expect(openDescriptors()).toBe(before);
  });
});

function readThrough(file: WalkedFile): string {
  const handle = file.open();
  try {
    return readFileSync(handle.fd, 'utf8');
  } finally {
    handle.close();
  }
}
