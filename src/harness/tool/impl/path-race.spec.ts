import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import type { Tool } from '../tool';
import { EditFileTool } from './edit-file-tool';
import { GlobTool } from './glob-tool';
import { GrepTool } from './grep-tool';
import { ReadFileTool } from './read-file-tool';
import { successJson, successText, textOf } from './testing/tool-return';
import { WriteFileTool } from './write-file-tool';

// A command of the session running in the background can swap a directory of the workspace for
// a link to somewhere else, over and over, while the server's file tools work on that directory.
// The check of a path and its use are then apart in time; the tools must still never read, write
// or list anything outside the workspace — the server may be able to reach what the command
// cannot (another user's workspace, or anything at all when it runs as root).
describe('the file tools while a directory of the workspace is being swapped for a link', () => {
  let sandbox: string;
  let workspace: string;
  let outside: string;
  let swapper: ChildProcess;

  beforeEach(async () => {
    sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'harness-race-')));
    workspace = path.join(sandbox, 'ws');
    outside = path.join(sandbox, 'outside');
    await fs.mkdir(path.join(workspace, 'd'), { recursive: true });
    await fs.writeFile(path.join(workspace, 'd', 'notes.txt'), 'inside\n');
    await fs.mkdir(outside);
    await fs.writeFile(path.join(outside, 'notes.txt'), 'OUTSIDE-SECRET\n');
    await fs.writeFile(path.join(outside, 'outside-only.txt'), 'OUTSIDE-SECRET\n');
    await fs.symlink(outside, path.join(workspace, 'l'));
    // d (a directory) and l (a link out) trade places as fast as renames go.
    const loop = [
      "const fs = require('node:fs');",
      'const [d, l, t] = process.argv.slice(1);',
      'for (;;) { try { fs.renameSync(d, t); fs.renameSync(l, d); fs.renameSync(t, l); } catch {} }',
    ].join('\n');
    swapper = spawn(process.execPath, ['-e', loop, ...['d', 'l', 't'].map((name) => path.join(workspace, name))], { stdio: 'ignore' });
    await new Promise<void>((resolve) => setTimeout(resolve, 50));
  });

  afterEach(async () => {
    swapper.kill('SIGKILL');
    await new Promise<void>((resolve) => (swapper.exitCode !== null || swapper.signalCode !== null ? resolve() : swapper.once('exit', () => resolve())));
    await fs.rm(sandbox, { recursive: true, force: true });
  });

  const call = (tool: Tool, args: Record<string, unknown>) => tool.execute(JSON.stringify(args), workspace);

  it('never reads, writes, edits, searches or lists what lies outside', async () => {
    const [read, write, edit, grep, glob] = [new ReadFileTool(), new WriteFileTool(), new EditFileTool(), new GrepTool(), new GlobTool()];
    for (let i = 0; i < 100; i++) {
      const results = await Promise.all([
        call(read, { path: 'd/notes.txt' }),
        call(write, { path: `d/written-${i}.txt`, content: 'x' }),
        call(edit, { path: 'd/notes.txt', old_string: 'inside', new_string: 'inside!' }),
        call(edit, { path: 'd/notes.txt', old_string: 'inside!', new_string: 'inside' }),
        call(grep, { pattern: 'SECRET|inside' }),
        call(glob, { pattern: '**/*' }),
      ]);
      for (const result of results.map(textOf)) {
        expect(result).not.toContain('OUTSIDE-SECRET');
        expect(result).not.toContain('outside-only');
      }
    }
    // Outside, nothing was written or changed.
    expect((await fs.readdir(outside)).sort()).toEqual(['notes.txt', 'outside-only.txt']);
    expect(await fs.readFile(path.join(outside, 'notes.txt'), 'utf8')).toBe('OUTSIDE-SECRET\n');
    // Once the swapping stops, the tools work as ever: they refused only what was being swapped.
    swapper.kill('SIGKILL');
    await new Promise<void>((resolve) => (swapper.exitCode !== null || swapper.signalCode !== null ? resolve() : swapper.once('exit', () => resolve())));
    expect(successJson(await call(write, { path: 'calm/notes.txt', content: 'calm\n' }))).toEqual({ path: 'calm/notes.txt', bytes: 5 });
    expect(successText(await call(read, { path: 'calm/notes.txt' }))).toBe('calm\n');
    expect(successJson(await call(grep, { pattern: '^calm$' })).matches).toEqual([{ file: 'calm/notes.txt', line: 1, text: 'calm' }]);
    // A hundred rounds against a swapper that keeps a core busy: on a loaded two-core machine
    // this takes far longer than the default 30 s, and what it checks does not depend on speed.
  }, 180_000);
});
