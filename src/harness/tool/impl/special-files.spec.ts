import { execFileSync } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import type { Tool } from '../tool';
import { EditFileTool } from './edit-file-tool';
import { GlobTool } from './glob-tool';
import { GrepTool } from './grep-tool';
import { ReadFileTool } from './read-file-tool';
import { failureMessage, successJson, successText } from './testing/tool-return';
import { openRegularFile, readAtMost, readReachedEnd } from './regular-file';
import { WriteFileTool } from './write-file-tool';

// Opening a FIFO blocks until its other end is opened: a tool that read or wrote one would hang
// its call (and the run) for good. Every file tool must refuse it, or skip it when walking.
describe('the file tools and a FIFO in the workspace', () => {
  let workspace: string;

  beforeEach(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-fifo-'));
    execFileSync('mkfifo', [path.join(workspace, 'pipe')]);
    await fs.symlink(path.join(workspace, 'pipe'), path.join(workspace, 'pipe-link'));
    await fs.writeFile(path.join(workspace, 'notes.txt'), 'find me\n');
  });

  afterEach(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const run = (tool: Tool, args: Record<string, unknown>) => tool.execute(JSON.stringify(args), workspace);

  it.each([
    ['read_file', () => new ReadFileTool(), { path: 'pipe' }],
    ['write_file', () => new WriteFileTool(), { path: 'pipe', content: 'x' }],
    ['edit_file', () => new EditFileTool(), { path: 'pipe', old_string: 'a', new_string: 'b' }],
    ['grep', () => new GrepTool(), { pattern: 'x', path: 'pipe' }],
    ['read_file through a link', () => new ReadFileTool(), { path: 'pipe-link' }],
    ['write_file through a link', () => new WriteFileTool(), { path: 'pipe-link', content: 'x' }],
    ['edit_file through a link', () => new EditFileTool(), { path: 'pipe-link', old_string: 'a', new_string: 'b' }],
  ] as Array<[string, () => Tool, Record<string, unknown>]>)('%s refuses it at once', async (_, tool, args) => {
    expect(failureMessage(await run(tool(), args))).toMatch(/^'pipe(-link)?' is not a regular file$/);
  });

  it('refuses it on the open handle, also while another process holds its other end', async () => {
    // This process as the reader: a write open of the FIFO then succeeds, and only the check on
    // the open handle can refuse it.
    const reader = await fs.open(path.join(workspace, 'pipe'), fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    try {
      for (const access of ['read', 'overwrite', 'create'] as const) {
        expect(await openRegularFile({ workspace, relativePath: 'pipe' }, 'pipe', access)).toEqual({ ok: false, error: "'pipe' is not a regular file" });
      }
    } finally {
      await reader.close();
    }
  });

  it('refuses a path that is a link where a resolved path was expected', async () => {
    expect(await openRegularFile({ workspace, relativePath: 'pipe-link' }, 'pipe-link', 'read')).toEqual({
      ok: false,
      error: "'pipe-link' changed while it was being opened (a link appeared on its path)",
    });
  });

  it('refuses a resolved path with a link where a directory should be, naming the change', async () => {
    await fs.mkdir(path.join(workspace, 'real'));
    await fs.writeFile(path.join(workspace, 'real', 'f.txt'), 'x');
    await fs.symlink(path.join(workspace, 'real'), path.join(workspace, 'dir-link'));
    expect(await openRegularFile({ workspace, relativePath: 'dir-link/f.txt' }, 'dir-link/f.txt', 'read')).toEqual({
      ok: false,
      error: "'dir-link/f.txt' changed while it was being opened (a link appeared on its path)",
    });
    // A plain file where a directory should be is reported as such.
    expect(await openRegularFile({ workspace, relativePath: 'notes.txt/f.txt' }, 'notes.txt/f.txt', 'read')).toEqual({
      ok: false,
      error: "a parent of 'notes.txt/f.txt' is not a directory",
    });
  });

  it('reads a file only up to a bound, however large it has grown', async () => {
    await fs.writeFile(path.join(workspace, 'ten.txt'), '0123456789');
    const opened = await openRegularFile({ workspace, relativePath: 'ten.txt' }, 'ten.txt', 'read');
    if (!opened.ok) throw new Error(opened.error);
    try {
      expect(readAtMost(opened.handle, 5, opened.size)).toBeNull();
      expect(readAtMost(opened.handle, 10, opened.size)?.toString()).toBe('0123456789');
      // Grown since it was opened: read to the bound, not to the size seen at open.
      await fs.appendFile(path.join(workspace, 'ten.txt'), 'abcdefghij');
      expect(readAtMost(opened.handle, 15, opened.size)).toBeNull();
      expect(readAtMost(opened.handle, 20, opened.size)?.toString()).toBe('0123456789abcdefghij');
    } finally {
      opened.handle.close();
    }
    const tooLarge = await new EditFileTool({ maxFileBytes: 15 }).execute(JSON.stringify({ path: 'ten.txt', old_string: 'abc', new_string: 'ABC' }), workspace);
    expect(failureMessage(tooLarge)).toBe("'ten.txt' is larger than 15 bytes; edit_file works on smaller files (use shell for this one)");
  });

  it('ends a read at a short read only once the size seen at open is reached', async () => {
    // A short read past that size is the end; one before it (a file system that answers short)
    // or a full one reads on.
    expect(readReachedEnd(0, 100, 10, 10)).toBe(true);
    expect(readReachedEnd(10, 100, 10, 10)).toBe(true);
    expect(readReachedEnd(5, 100, 5, 10)).toBe(false);
    expect(readReachedEnd(100, 100, 100, 10)).toBe(false);
    await fs.writeFile(path.join(workspace, 'ten.txt'), '0123456789');
    const opened = await openRegularFile({ workspace, relativePath: 'ten.txt' }, 'ten.txt', 'read');
    if (!opened.ok) throw new Error(opened.error);
    try {
      expect(opened.size).toBe(10);
      // Shrunk since it was opened (grown: the test above): what is left is read, not what was there.
      await fs.truncate(path.join(workspace, 'ten.txt'), 4);
      expect(readAtMost(opened.handle, 100, opened.size)?.toString()).toBe('0123');
    } finally {
      opened.handle.close();
    }
    // read_file too, across reads of its chunk size.
    const large = 'x'.repeat(64 * 1024 - 1) + '\n' + 'y'.repeat(100) + '\n';
    await fs.writeFile(path.join(workspace, 'large.txt'), large);
    expect(successText(await run(new ReadFileTool(), { path: 'large.txt' }))).toBe(large);
  });

  it('grep still searches a link to a regular file inside the workspace', async () => {
    await fs.symlink(path.join(workspace, 'notes.txt'), path.join(workspace, 'notes-link.txt'));
    expect(successJson(await run(new GrepTool(), { pattern: 'find' }))).toEqual({
      matches: [
        { file: 'notes-link.txt', line: 1, text: 'find me' },
        { file: 'notes.txt', line: 1, text: 'find me' },
      ],
      truncated: false,
    });
  });

  it('grep and glob walk past it', async () => {
    expect(successJson(await run(new GrepTool(), { pattern: 'find' }))).toEqual({
      matches: [{ file: 'notes.txt', line: 1, text: 'find me' }],
      truncated: false,
    });
    expect(successJson(await run(new GlobTool(), { pattern: '*' }))).toEqual({ files: ['notes.txt'], truncated: false });
  });
});
