import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { isInside, resolveInWorkspace } from './workspace-path';

describe('resolveInWorkspace', () => {
  let sandbox: string;
  let workspace: string;
  let outside: string;

  beforeEach(async () => {
    sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'harness-wspath-')));
    workspace = path.join(sandbox, 'ws');
    outside = path.join(sandbox, 'outside');
    await fs.mkdir(path.join(workspace, 'src'), { recursive: true });
    await fs.mkdir(outside);
    await fs.writeFile(path.join(workspace, 'src', 'a.ts'), 'a');
    await fs.writeFile(path.join(outside, 'secret.txt'), 'secret');
  });

  afterEach(async () => {
    await fs.rm(sandbox, { recursive: true, force: true });
  });

  function expectRefused(relativePath: string, pattern: RegExp, root = workspace): void {
    const result = resolveInWorkspace(root, relativePath);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(pattern);
  }

  describe('when the path stays inside', () => {
    it('resolves an existing file to its absolute path', async () => {
      const result = resolveInWorkspace(workspace, 'src/a.ts');
      expect(result).toEqual({
        ok: true,
        path: path.join(workspace, 'src', 'a.ts'),
        workspace,
        relativePath: 'src/a.ts',
      });
    });

    it('resolves a path that does not exist yet, below missing directories', async () => {
      const result = resolveInWorkspace(workspace, 'new/dir/b.ts');
      expect(result).toEqual(expect.objectContaining({ ok: true, path: path.join(workspace, 'new', 'dir', 'b.ts') }));
    });

    it('allows `..` that comes back inside and `.` for the root', async () => {
      expect(resolveInWorkspace(workspace, 'src/../src/a.ts')).toEqual(expect.objectContaining({ relativePath: 'src/a.ts' }));
      expect(resolveInWorkspace(workspace, '.')).toEqual(expect.objectContaining({ ok: true, path: workspace, relativePath: '.' }));
    });

    it('follows a symlink that stays inside and returns its target', async () => {
      await fs.symlink(path.join(workspace, 'src'), path.join(workspace, 'alias'));
      expect(resolveInWorkspace(workspace, 'alias/a.ts')).toEqual(
        expect.objectContaining({ ok: true, path: path.join(workspace, 'src', 'a.ts'), relativePath: 'src/a.ts' }),
      );
    });

    it('follows a dangling symlink whose target would be inside', async () => {
      await fs.symlink('src/later.ts', path.join(workspace, 'later'));
      expect(resolveInWorkspace(workspace, 'later')).toEqual(
        expect.objectContaining({ ok: true, path: path.join(workspace, 'src', 'later.ts') }),
      );
    });

    it('accepts a workspace path that itself goes through a symlink', async () => {
      const linkedWorkspace = path.join(sandbox, 'ws-link');
      await fs.symlink(workspace, linkedWorkspace);
      expect(resolveInWorkspace(linkedWorkspace, 'src/a.ts')).toEqual(
        expect.objectContaining({ ok: true, path: path.join(workspace, 'src', 'a.ts'), workspace }),
      );
      expectRefused('../outside/secret.txt', /outside the workspace/, linkedWorkspace);
    });
  });

  describe('when the path would leave the workspace', () => {
    it('refuses an absolute path', async () => {
      expectRefused(path.join(workspace, 'src', 'a.ts'), /absolute paths are not allowed/);
    });

    it('refuses `..` that escapes', async () => {
      expectRefused('../outside/secret.txt', /outside the workspace/);
      expectRefused('src/../../outside', /outside the workspace/);
      expectRefused('..', /outside the workspace/);
    });

    it('refuses a symlinked file pointing outside', async () => {
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'link.txt'));
      expectRefused('link.txt', /outside the workspace through a symlink/);
    });

    it('refuses a path below a symlinked directory pointing outside, existing or not', async () => {
      await fs.symlink(outside, path.join(workspace, 'out'));
      expectRefused('out/secret.txt', /through a symlink/);
      expectRefused('out/new/file.txt', /through a symlink/);
    });

    it('refuses a dangling symlink whose target would be outside', async () => {
      await fs.symlink(path.join(outside, 'not-yet.txt'), path.join(workspace, 'dangling'));
      expectRefused('dangling', /through a symlink/);
      await fs.symlink(path.join(outside, 'no-dir'), path.join(workspace, 'dangling-dir'));
      expectRefused('dangling-dir/file.txt', /through a symlink/);
    });

    it('refuses a symlink loop', async () => {
      await fs.symlink('loop-b', path.join(workspace, 'loop-a'));
      await fs.symlink('loop-a', path.join(workspace, 'loop-b'));
      expectRefused('loop-a', /symlink loop/);
    });
  });

  describe('when the input is unusable', () => {
    it.each([null, undefined, '', '   '])('refuses the workspace %p', async (root) => {
      expect(resolveInWorkspace(root, 'a.txt')).toEqual({ ok: false, error: 'no workspace is set for this session' });
    });

    it('refuses a workspace that does not exist', async () => {
      expectRefused('a.txt', /workspace does not exist/, path.join(sandbox, 'missing'));
    });

    it('refuses an empty path and a NUL character', async () => {
      expectRefused('', /must not be empty/);
      expectRefused('a\0b', /NUL/);
    });
  });
});

describe('isInside', () => {
  it('treats siblings with a common name prefix as outside', () => {
    expect(isInside('/w/ws', '/w/ws-other/a')).toBe(false);
    expect(isInside('/w/ws', '/w/ws/..a')).toBe(true);
    expect(isInside('/w/ws', '/w/ws')).toBe(true);
  });
});
