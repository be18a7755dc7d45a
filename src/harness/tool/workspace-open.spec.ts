import { constants as fsConstants, readFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { createFileBeneath, openDirectoryBeneath, openFileBeneath, type Descriptor } from './workspace-open';

/** The error `fn` throws (or `undefined`). */
function thrown(fn: () => unknown): NodeJS.ErrnoException | undefined {
  try {
    fn();
  } catch (error) {
    return error as NodeJS.ErrnoException;
  }
  return undefined;
}

/** The text of an open file, read through its descriptor; closes it. */
function textOf(descriptor: Descriptor): string {
  try {
    return readFileSync(descriptor.fd, 'utf8');
  } finally {
    descriptor.close();
  }
}

const WRITE = fsConstants.O_WRONLY;

describe('workspace-open', () => {
  let sandbox: string;
  let workspace: string;
  let outside: string;

  beforeEach(async () => {
    sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'harness-open-')));
    workspace = path.join(sandbox, 'ws');
    outside = path.join(sandbox, 'outside');
    await fs.mkdir(path.join(workspace, 'notes'), { recursive: true });
    await fs.mkdir(outside);
    await fs.writeFile(path.join(workspace, 'notes', 'a.md'), 'note a\n');
  });

  afterEach(async () => {
    await fs.rm(sandbox, { recursive: true, force: true });
  });

  describe('Descriptor', () => {
    it('reads, writes and truncates through its descriptor, and is closed once', () => {
      const file = openFileBeneath(workspace, 'notes/a.md', fsConstants.O_RDWR);
      expect(file.stat().size).toBe(7);
      const buffer = Buffer.alloc(16);
      expect(file.read(buffer, 0, 16, 0)).toBe(7);
      expect(buffer.subarray(0, 7).toString()).toBe('note a\n');
      file.truncate(0);
      file.writeText('écrit');
      file.close();
      expect(file.fd).toBe(-1);
      expect(() => file.close()).not.toThrow();
      expect(readFileSync(path.join(workspace, 'notes', 'a.md'), 'utf8')).toBe('écrit');
    });
  });

  describe('openFileBeneath', () => {
    it('opens a file below its directories, at the top of the workspace too', async () => {
      await fs.writeFile(path.join(workspace, 'top.txt'), 'top\n');
      expect(textOf(openFileBeneath(workspace, 'notes/a.md', fsConstants.O_RDONLY))).toBe('note a\n');
      expect(textOf(openFileBeneath(workspace, 'top.txt', fsConstants.O_RDONLY))).toBe('top\n');
    });

    it('refuses a link on the way or at the end with ELOOP, and the workspace itself with EISDIR', async () => {
      await fs.writeFile(path.join(outside, 'secret.txt'), 'secret\n');
      await fs.symlink(outside, path.join(workspace, 'dir-link'));
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'notes', 'file-link'));
      expect(thrown(() => openFileBeneath(workspace, 'dir-link/secret.txt', fsConstants.O_RDONLY))?.code).toBe('ELOOP');
      expect(thrown(() => openFileBeneath(workspace, 'notes/file-link', fsConstants.O_RDONLY))?.code).toBe('ELOOP');
      expect(thrown(() => openFileBeneath(workspace, '.', fsConstants.O_RDONLY))?.code).toBe('EISDIR');
      expect(thrown(() => openFileBeneath(workspace, 'notes/missing.md', fsConstants.O_RDONLY))?.code).toBe('ENOENT');
    });
  });

  describe('openDirectoryBeneath', () => {
    it('makes missing directories only when asked to', async () => {
      expect(thrown(() => openDirectoryBeneath(workspace, 'new/deeper'))?.code).toBe('ENOENT');
      openDirectoryBeneath(workspace, 'new/deeper', true).close();
      expect((await fs.stat(path.join(workspace, 'new', 'deeper'))).isDirectory()).toBe(true);
    });

    it('does not make a directory through a link that leads out', async () => {
      await fs.symlink(outside, path.join(workspace, 'dir-link'));
      expect(thrown(() => openDirectoryBeneath(workspace, 'dir-link/made', true))?.code).toBe('ELOOP');
      expect(await fs.readdir(outside)).toEqual([]);
    });
  });

  describe('createFileBeneath', () => {
    it('creates a missing file below missing directories', async () => {
      const file = await createFileBeneath(workspace, 'new/dir/b.md', WRITE);
      file.writeText('b');
      file.close();
      expect(await fs.readFile(path.join(workspace, 'new', 'dir', 'b.md'), 'utf8')).toBe('b');
      const top = await createFileBeneath(workspace, 'top.md', WRITE);
      top.close();
      expect((await fs.stat(path.join(workspace, 'top.md'))).size).toBe(0);
    });

    it('opens an existing file as it is, emptying it only with O_TRUNC', async () => {
      const kept = await createFileBeneath(workspace, 'notes/a.md', fsConstants.O_RDWR);
      expect(textOf(kept)).toBe('note a\n');
      (await createFileBeneath(workspace, 'notes/a.md', WRITE | fsConstants.O_TRUNC)).close();
      expect(await fs.readFile(path.join(workspace, 'notes', 'a.md'), 'utf8')).toBe('');
    });

    it('never creates or writes through a link, dangling or not, on the way or at the end', async () => {
      await fs.writeFile(path.join(outside, 'secret.txt'), 'secret\n');
      await fs.symlink(outside, path.join(workspace, 'dir-link'));
      await fs.symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'file-link'));
      await fs.symlink(path.join(outside, 'new.txt'), path.join(workspace, 'notes', 'dangling'));
      for (const target of ['dir-link/new.txt', 'dir-link/below/new.txt', 'file-link', 'notes/dangling']) {
        await expect(createFileBeneath(workspace, target, WRITE | fsConstants.O_TRUNC)).rejects.toMatchObject({ code: 'ELOOP' });
      }
      expect((await fs.readdir(outside)).sort()).toEqual(['secret.txt']);
      expect(await fs.readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
    });

    it('refuses the workspace itself and a path with ..', async () => {
      await expect(createFileBeneath(workspace, '.', WRITE)).rejects.toMatchObject({ code: 'EISDIR' });
      await expect(createFileBeneath(workspace, 'notes/../b.md', WRITE)).rejects.toMatchObject({ code: 'EINVAL' });
    });

    it('creates the file a parallel call is creating too, once', async () => {
      const files = await Promise.all(Array.from({ length: 10 }, () => createFileBeneath(workspace, 'fresh/same.md', WRITE)));
      files.forEach((file) => file.close());
      expect(await fs.readdir(path.join(workspace, 'fresh'))).toEqual(['same.md']);
    });
  });
});
