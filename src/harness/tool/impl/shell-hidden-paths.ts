import * as fs from 'node:fs';
import * as path from 'node:path';

/** Where the server keeps what confined `shell` commands must not see. */
export interface ServerDataPaths {
  /** The root of every session's workspace. */
  workspaceRoot: string;
  /** The SQLite database file, or `:memory:`. */
  dbPath: string;
}

/**
 * What confined `shell` commands must not see: the workspace root (other users' and sessions'
 * workspaces) and the database, which holds every user's messages — its whole directory, or,
 * where that directory is one the commands need (`/`, `/usr`, `/etc`, …), the database file and
 * its SQLite companions (`-wal`, `-shm`, `-journal`). Real paths, as the workspaces are; a
 * directory not created yet is resolved through its nearest existing ancestor, so the answer is
 * the same before and after the server creates it.
 */
export function shellHiddenPaths(paths: ServerDataPaths): string[] {
  const hidden = [realPath(paths.workspaceRoot)];
  if (paths.dbPath === ':memory:') return hidden;
  const dbDir = realPath(path.dirname(paths.dbPath));
  if (!SYSTEM_DIRECTORIES.has(dbDir)) return [...hidden, dbDir];
  const dbFile = path.join(dbDir, path.basename(paths.dbPath));
  return [...hidden, dbFile, `${dbFile}-wal`, `${dbFile}-shm`, `${dbFile}-journal`];
}

/** Directories a command cannot do without: the database is hidden file by file in these. */
const SYSTEM_DIRECTORIES = new Set(['/', '/bin', '/sbin', '/lib', '/lib64', '/usr', '/usr/bin', '/usr/lib', '/usr/local', '/etc', '/dev', '/proc', '/tmp', '/var', '/home', '/root']);

/** The real path of `target`, or of its nearest existing ancestor followed by the rest of it. */
function realPath(target: string): string {
  const absolute = path.resolve(target);
  const missing: string[] = [];
  for (let existing = absolute; ; existing = path.dirname(existing)) {
    try {
      return path.join(fs.realpathSync(existing), ...missing);
    } catch {
      if (path.dirname(existing) === existing) return absolute;
      missing.unshift(path.basename(existing));
    }
  }
}
