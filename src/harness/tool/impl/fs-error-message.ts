import { constants as fsConstants } from 'node:fs';
import * as fs from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

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

/** How `openRegularFile` opens: to read, to replace an existing file's content, or to create or replace one. */
export type RegularFileAccess = 'read' | 'overwrite' | 'create';

const OPEN_FLAGS: Record<RegularFileAccess, number> = {
  read: fsConstants.O_RDONLY,
  overwrite: fsConstants.O_WRONLY | fsConstants.O_TRUNC,
  create: fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_TRUNC,
};

/**
 * Opens `file` only if it is a regular file, or answers the error to give the model. Reading or
 * writing a FIFO or a device would block the call until some other process opened its other end,
 * so the file is opened with `O_NONBLOCK` (which changes nothing for a regular file) and then
 * checked on the open handle itself: the check and the use are of the same file, even if the
 * path is swapped meanwhile. A FIFO without a reader refuses a non-blocking write open (`ENXIO`);
 * that is answered as not a regular file too. `file` is the resolved path the workspace check
 * approved (`resolveInWorkspace`), so it is opened with `O_NOFOLLOW`: a link swapped in at its
 * place since the check is refused rather than followed out of the workspace.
 */
export async function openRegularFile(
  file: string,
  relativePath: string,
  access: RegularFileAccess,
): Promise<{ ok: true; handle: FileHandle; size: number } | { ok: false; error: string }> {
  let handle: FileHandle;
  try {
    handle = await fs.open(file, OPEN_FLAGS[access] | fsConstants.O_NONBLOCK | fsConstants.O_NOFOLLOW, 0o666);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (code === 'ENXIO') return { ok: false, error: `'${relativePath}' is not a regular file` };
    if (code === 'ELOOP') return { ok: false, error: `'${relativePath}' changed into a link while it was being opened` };
    return { ok: false, error: describeFsError(error, relativePath) };
  }
  try {
    const stat = await handle.stat();
    if (stat.isFile()) return { ok: true, handle, size: stat.size };
    await handle.close();
    return { ok: false, error: stat.isDirectory() ? `'${relativePath}' is a directory` : `'${relativePath}' is not a regular file` };
  } catch (error) {
    await handle.close().catch(() => undefined);
    return { ok: false, error: describeFsError(error, relativePath) };
  }
}
