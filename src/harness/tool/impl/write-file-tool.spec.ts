import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { WriteFileTool } from './write-file-tool';
import { failureMessage, successJson } from './testing/tool-return';

describe('WriteFileTool', () => {
  let workspace: string;

  beforeEach(async () => {
    workspace = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-write-'));
  });

  afterEach(async () => {
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const write = (args: Record<string, unknown>) => new WriteFileTool().execute(JSON.stringify(args), workspace);

  it('creates the file and its missing parent directories, reporting path and UTF-8 bytes', async () => {
    expect(successJson(await write({ path: 'src/deep/new.txt', content: 'héllo' }))).toEqual({ path: 'src/deep/new.txt', bytes: 6 });
    expect(await fs.readFile(path.join(workspace, 'src', 'deep', 'new.txt'), 'utf8')).toBe('héllo');
  });

  it('overwrites an existing file and accepts empty content', async () => {
    await fs.writeFile(path.join(workspace, 'a.txt'), 'old content');
    expect(successJson(await write({ path: './a.txt', content: '' }))).toEqual({ path: 'a.txt', bytes: 0 });
    expect(await fs.readFile(path.join(workspace, 'a.txt'), 'utf8')).toBe('');
  });

  it('writes through a symlink that stays inside the workspace, naming the real file', async () => {
    await fs.mkdir(path.join(workspace, 'real'));
    await fs.symlink('real', path.join(workspace, 'alias'));
    expect(successJson(await write({ path: 'alias/x.txt', content: 'x' }))).toEqual({ path: 'real/x.txt', bytes: 1 });
    expect(await fs.readFile(path.join(workspace, 'real', 'x.txt'), 'utf8')).toBe('x');
  });

  it('reports a directory in the way', async () => {
    await fs.mkdir(path.join(workspace, 'dir'));
    expect(failureMessage(await write({ path: 'dir', content: 'x' }))).toBe("'dir' is a directory");
    expect(failureMessage(await write({ path: '.', content: 'x' }))).toBe('path must name a file, not the workspace itself');
  });

  it('reports a file where a parent directory should be', async () => {
    await fs.writeFile(path.join(workspace, 'file'), '');
    expect(failureMessage(await write({ path: 'file/child.txt', content: 'x' }))).toMatch(/'file\/child.txt'/);
  });

  it('refuses content that is not a string', async () => {
    expect(failureMessage(await write({ path: 'a.txt', content: 42 }))).toBe("'content' must be a string, got number");
  });
});
