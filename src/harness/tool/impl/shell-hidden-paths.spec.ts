import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { shellHiddenPaths } from './shell-hidden-paths';

describe('what confined shell commands must not see', () => {
  const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-hidden-')));
  afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

  it("hides the workspace root and the database's whole directory", () => {
    expect(shellHiddenPaths({ workspaceRoot: path.join(scratch, 'workspaces'), dbPath: path.join(scratch, 'db', 'harness.db') })).toEqual([
      path.join(scratch, 'workspaces'),
      path.join(scratch, 'db'),
    ]);
  });

  it('hides nothing of an in-memory database', () => {
    expect(shellHiddenPaths({ workspaceRoot: path.join(scratch, 'workspaces'), dbPath: ':memory:' })).toEqual([path.join(scratch, 'workspaces')]);
  });

  it.each(['/', '/tmp', '/usr', '/etc'])('hides only the database files where the directory is %s, which commands need', (dir) => {
    const dbPath = path.join(dir, 'harness.db');
    expect(shellHiddenPaths({ workspaceRoot: path.join(scratch, 'workspaces'), dbPath })).toEqual([
      path.join(scratch, 'workspaces'),
      dbPath,
      `${dbPath}-wal`,
      `${dbPath}-shm`,
      `${dbPath}-journal`,
    ]);
  });

  describe('when the directories are not created yet', () => {
    it('resolves them through a link in their existing ancestors, as they will resolve once created', () => {
      fs.mkdirSync(path.join(scratch, 'real'));
      fs.symlinkSync(path.join(scratch, 'real'), path.join(scratch, 'link'));
      const paths = { workspaceRoot: path.join(scratch, 'link', 'data', 'workspaces'), dbPath: path.join(scratch, 'link', 'data', 'db', 'harness.db') };

      const before = shellHiddenPaths(paths);
      fs.mkdirSync(paths.workspaceRoot, { recursive: true });
      fs.mkdirSync(path.dirname(paths.dbPath), { recursive: true });

      expect(before).toEqual([path.join(scratch, 'real', 'data', 'workspaces'), path.join(scratch, 'real', 'data', 'db')]);
      expect(shellHiddenPaths(paths)).toEqual(before);
    });
  });
});
