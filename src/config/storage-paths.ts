import { closeSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import { ConfigError } from './config-error';
import { fileErrorReason } from './config-files';

/**
 * `HARNESS_DB`: a SQLite file, or a path where one can be created. The database is opened later,
 * inside Nest, so what can be seen now is checked now: a directory, a file of another kind, a
 * file standing where a directory must be created.
 */
export function readDbPath(value: string | null): string {
  const text = value ?? './data/harness.db';
  if (text === ':memory:') return text;
  const file = path.resolve(text);
  const stats = statIfExists('HARNESS_DB', file);
  if (stats === null) {
    checkCreatable('HARNESS_DB', path.dirname(file), file);
  } else if (stats.isDirectory()) {
    throw new ConfigError('HARNESS_DB', `${file} is a directory; expected a SQLite database file, or a path where one can be created`);
  } else if (stats.size > 0 && !hasSqliteHeader(file)) {
    throw new ConfigError('HARNESS_DB', `${file} is not a SQLite database`);
  }
  return file;
}

/** `HARNESS_WORKSPACE_ROOT`: a directory, or a path where one can be created. */
export function readWorkspaceRoot(value: string | null): string {
  const dir = path.resolve(value ?? './data/workspaces');
  const stats = statIfExists('HARNESS_WORKSPACE_ROOT', dir);
  if (stats === null) checkCreatable('HARNESS_WORKSPACE_ROOT', dir, dir);
  else if (!stats.isDirectory()) throw new ConfigError('HARNESS_WORKSPACE_ROOT', `${dir} is not a directory`);
  return dir;
}

/** The server creates the missing directories up to `dir`: the nearest one that exists must be a directory. */
function checkCreatable(variable: string, dir: string, target: string): void {
  let existing = dir;
  let stats = statIfExists(variable, existing);
  while (stats === null && path.dirname(existing) !== existing) {
    existing = path.dirname(existing);
    stats = statIfExists(variable, existing);
  }
  if (stats !== null && !stats.isDirectory()) throw new ConfigError(variable, `cannot create ${target}: ${existing} is not a directory`);
}

function statIfExists(variable: string, file: string): Stats | null {
  try {
    return statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw new ConfigError(variable, `cannot reach ${file}: ${fileErrorReason(error)}`);
  }
}

/** Every SQLite database file starts with these 16 bytes (sqlite.org/fileformat.html). */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

function hasSqliteHeader(file: string): boolean {
  const header = Buffer.alloc(SQLITE_HEADER.length);
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    throw new ConfigError('HARNESS_DB', `cannot read ${file}: ${fileErrorReason(error)}`);
  }
  try {
    return readSync(fd, header, 0, header.length, 0) === header.length && header.equals(SQLITE_HEADER);
  } finally {
    closeSync(fd);
  }
}
