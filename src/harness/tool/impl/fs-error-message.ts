import type { Stats } from 'node:fs';
import * as fs from 'node:fs/promises';

import { messageOf } from './json-result';

/**
 * A file-system failure phrased for the model, naming the workspace-relative path rather than
 * the server's absolute one (which the model should neither see nor reuse).
 */
export function describeFsError(error: unknown, relativePath: string): string {
  switch ((error as NodeJS.ErrnoException | null)?.code) {
    case 'ENOENT':
      return `no such file or directory: '${relativePath}'`;
    case 'EISDIR':
      return `'${relativePath}' is a directory`;
    case 'ENOTDIR':
      return `a parent of '${relativePath}' is not a directory`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied: '${relativePath}'`;
    case 'EEXIST':
      return `'${relativePath}' already exists and is in the way`;
    default:
      return `cannot access '${relativePath}': ${stripAbsolutePaths(messageOf(error))}`;
  }
}

/** Node's fs messages end with the absolute path in quotes; keep only the reason. */
function stripAbsolutePaths(message: string): string {
  return message.replace(/,?\s*\w+\s+'\/[^']*'/g, '').trim();
}

/**
 * `null` when `file` is a regular file (or, with `mayBeAbsent`, does not exist yet); otherwise
 * the error to give the model. Reading or writing a FIFO or a device would block the call until
 * some other process opened its other end, so only regular files are read and written.
 */
export async function regularFileProblem(file: string, relativePath: string, mayBeAbsent = false): Promise<string | null> {
  let stat: Stats;
  try {
    stat = await fs.stat(file);
  } catch (error) {
    if (mayBeAbsent && (error as NodeJS.ErrnoException | null)?.code === 'ENOENT') return null;
    return describeFsError(error, relativePath);
  }
  if (stat.isFile()) return null;
  return stat.isDirectory() ? `'${relativePath}' is a directory` : `'${relativePath}' is not a regular file`;
}
