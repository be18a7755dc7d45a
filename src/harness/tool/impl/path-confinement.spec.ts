import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import type { Tool } from '../tool';
import { EditFileTool } from './edit-file-tool';
import { GlobTool } from './glob-tool';
import { GrepTool } from './grep-tool';
import { ReadFileTool } from './read-file-tool';
import { failureMessage, successJson } from './testing/tool-return';
import { WriteFileTool } from './write-file-tool';

/** Every path-taking tool, with the arguments that aim it at `target`. */
const PATH_TOOLS: Array<[string, () => Tool, (target: string) => Record<string, unknown>]> = [
  ['read_file', () => new ReadFileTool(), (target) => ({ path: target })],
  ['write_file', () => new WriteFileTool(), (target) => ({ path: target, content: 'overwritten' })],
  ['edit_file', () => new EditFileTool(), (target) => ({ path: target, old_string: 'secret', new_string: 'leaked' })],
  ['glob', () => new GlobTool(), (target) => ({ pattern: '**/*', path: target })],
  ['grep', () => new GrepTool(), (target) => ({ pattern: 'secret', path: target })],
];

describe('path confinement of the built-in tools', () => {
  let sandbox: string;
  let workspace: string;
  let outside: string;

  beforeEach(async () => {
    sandbox = await fs.mkdtemp(path.join(os.tmpdir(), 'harness-confine-'));
    workspace = path.join(sandbox, 'ws');
    outside = path.join(sandbox, 'outside');
    await fs.mkdir(workspace);
    await fs.mkdir(outside);
    await fs.writeFile(path.join(outside, 'secret.txt'), 'secret\n');
    await fs.symlink(path.join(outside, 'secret.txt'), path.join(workspace, 'file-link'));
    await fs.symlink(outside, path.join(workspace, 'dir-link'));
    await fs.symlink(path.join(outside, 'missing.txt'), path.join(workspace, 'dangling'));
  });

  afterEach(async () => {
    await fs.rm(sandbox, { recursive: true, force: true });
  });

  describe.each(PATH_TOOLS)('%s', (_name, makeTool, argsFor) => {
    const escapes: Array<[string, () => string, RegExp]> = [
      ['a `..` path', () => '../outside/secret.txt', /outside the workspace/],
      ['a bare `..`', () => '..', /outside the workspace/],
      ['an absolute path', () => path.join(outside, 'secret.txt'), /absolute paths are not allowed/],
      ['a symlinked file pointing outside', () => 'file-link', /through a symlink/],
      ['a path inside a symlinked directory pointing outside', () => 'dir-link/secret.txt', /through a symlink/],
      ['a symlinked directory pointing outside', () => 'dir-link', /through a symlink/],
      ['a dangling symlink pointing outside', () => 'dangling', /through a symlink/],
    ];

    it.each(escapes)('refuses %s and leaves the outside untouched', async (_label, target, message) => {
      const given = target();
      const error = failureMessage(await makeTool().execute(JSON.stringify(argsFor(given)), workspace));
      expect(error).toMatch(message);
      // The error may echo the path the model gave, never where a symlink leads.
      expect(error.replace(given, '')).not.toContain(outside);
      expect(await fs.readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
      expect((await fs.readdir(outside)).sort()).toEqual(['secret.txt']);
    });
  });

  it('glob and grep over the whole workspace do not reach through symlinks outside', async () => {
    await fs.writeFile(path.join(workspace, 'inside.txt'), 'secret inside\n');
    const globbed = successJson(await new GlobTool().execute('{"pattern":"**/*"}', workspace));
    expect(globbed.files).toEqual(['inside.txt']);
    const grepped = successJson(await new GrepTool().execute('{"pattern":"secret"}', workspace));
    expect(grepped.matches).toEqual([{ file: 'inside.txt', line: 1, text: 'secret inside' }]);
  });
});
