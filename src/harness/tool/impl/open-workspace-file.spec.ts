import { readFileSync, writeFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { openWorkspaceFile, type OpenedWorkspaceFile } from './regular-file';

/** The text of an opened file (and closes it), or the error it was answered with. */
function contentOf(opened: OpenedWorkspaceFile): string {
  if (!opened.ok) return `error: ${opened.error}`;
  try {
    return readFileSync(opened.handle.fd, 'utf8');
  } finally {
    opened.handle.close();
  }
}

describe('openWorkspaceFile', () => {
  let sandbox: string;
  let workspace: string;
  let outside: string;
  let realpath: jest.SpyInstance;

  beforeEach(async () => {
    sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'harness-open-ws-')));
    workspace = path.join(sandbox, 'ws');
    outside = path.join(sandbox, 'outside');
    await fs.mkdir(path.join(workspace, 'notes'), { recursive: true });
    await fs.mkdir(outside);
    await fs.writeFile(path.join(workspace, 'notes', 'a.md'), 'note a\n');
    await fs.writeFile(path.join(outside, 'secret.txt'), 'secret\n');
    // The function the workspace paths are resolved with (the module's own object, not a view of it).
    realpath = jest.spyOn(jest.requireActual<typeof import('node:fs')>('node:fs').realpathSync, 'native');
  });

  afterEach(async () => {
    realpath.mockRestore();
    await fs.rm(sandbox, { recursive: true, force: true });
  });

  it('opens a path with no link on its way without resolving it, once the workspace is known', async () => {
    expect(contentOf(await openWorkspaceFile(workspace, 'notes/a.md', 'read'))).toBe('note a\n');
    realpath.mockClear();
    const opened = await openWorkspaceFile(workspace, './notes/../notes/a.md', 'read');
    expect(opened.ok && opened.shown).toBe('notes/a.md');
    expect(contentOf(opened)).toBe('note a\n');
    expect(realpath).not.toHaveBeenCalled();
  });

  it('follows a link that stays inside, showing the path it leads to', async () => {
    await fs.symlink(path.join(workspace, 'notes'), path.join(workspace, 'latest'));
    realpath.mockClear();
    const opened = await openWorkspaceFile(workspace, 'latest/a.md', 'read');
    expect(opened.ok && opened.shown).toBe('notes/a.md');
    expect(contentOf(opened)).toBe('note a\n');
    // The quick open met the link; the path was resolved instead.
    expect(realpath).toHaveBeenCalled();

    const created = await openWorkspaceFile(workspace, 'latest/b.md', 'create');
    expect(created.ok && created.shown).toBe('notes/b.md');
    if (created.ok) {
      writeFileSync(created.handle.fd, 'b');
      created.handle.close();
    }
    expect(await fs.readFile(path.join(workspace, 'notes', 'b.md'), 'utf8')).toBe('b');
  });

  it('refuses links that lead out, as resolving the path refuses them, and writes nothing outside', async () => {
    await fs.symlink(outside, path.join(workspace, 'dir-link'));
    await fs.symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'file-link'));
    await fs.symlink(path.join(outside, 'new.txt'), path.join(workspace, 'dangling'));
    for (const target of ['dir-link/secret.txt', 'file-link', 'dangling', 'dir-link/new/b.txt']) {
      for (const access of ['read', 'create'] as const) {
        expect(contentOf(await openWorkspaceFile(workspace, target, access))).toMatch(/leads outside the workspace through a symlink/);
      }
    }
    expect((await fs.readdir(outside)).sort()).toEqual(['secret.txt']);
    expect(await fs.readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
  });

  it('answers a missing file, a directory and the workspace itself as before', async () => {
    expect(contentOf(await openWorkspaceFile(workspace, 'notes/missing.md', 'read'))).toBe("error: no such file or directory: 'notes/missing.md'");
    expect(contentOf(await openWorkspaceFile(workspace, 'notes', 'read', { directoryError: (shown) => `'${shown}' is a folder` }))).toBe(
      "error: 'notes' is a folder",
    );
    expect(contentOf(await openWorkspaceFile(workspace, 'notes/..', 'create', { workspaceError: 'not the workspace' }))).toBe(
      'error: not the workspace',
    );
    expect(contentOf(await openWorkspaceFile(workspace, '../outside/secret.txt', 'read'))).toMatch(/outside the workspace/);
  });

  it('creates a file below missing directories on the quick path', async () => {
    const opened = await openWorkspaceFile(workspace, 'new/dir/b.md', 'create');
    expect(opened.ok && opened.shown).toBe('new/dir/b.md');
    if (opened.ok) {
      writeFileSync(opened.handle.fd, 'b');
      opened.handle.close();
    }
    expect(await fs.readFile(path.join(workspace, 'new', 'dir', 'b.md'), 'utf8')).toBe('b');
  });

  it('notices a workspace that is gone, and one that came back elsewhere through a link', async () => {
    expect((await openWorkspaceFile(workspace, 'notes/a.md', 'read')).ok).toBe(true);
    await fs.rename(workspace, path.join(sandbox, 'moved'));
    expect(contentOf(await openWorkspaceFile(workspace, 'notes/a.md', 'read'))).toBe('error: the session workspace does not exist');
    // The workspace's path now leads to the moved directory: its files are found there.
    await fs.symlink(path.join(sandbox, 'moved'), workspace);
    expect(contentOf(await openWorkspaceFile(workspace, 'notes/a.md', 'read'))).toBe('note a\n');
  });

  it('resolves every path first where the walk cannot refuse links (no /proc)', async () => {
    let open: typeof openWorkspaceFile = openWorkspaceFile;
    jest.isolateModules(() => {
      jest.doMock('../workspace-open', () => ({ ...jest.requireActual<object>('../workspace-open'), canOpenBeneath: () => false }));
      ({ openWorkspaceFile: open } = jest.requireActual<typeof import('./regular-file')>('./regular-file'));
    });
    expect(contentOf(await open(workspace, 'notes/a.md', 'read'))).toBe('note a\n');
    realpath.mockClear();
    expect(contentOf(await open(workspace, 'notes/a.md', 'read'))).toBe('note a\n');
    expect(realpath).toHaveBeenCalled();
  });
});
