import { constants as fsConstants, existsSync, type Dirent } from 'node:fs';
import * as fs from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';

/**
 * Opening workspace files without a window between the check and the use.
 *
 * `resolveInWorkspace` checks a path; by the time a tool opens it, a command of the session
 * running in the background may have swapped a directory on the way for a link that leads out
 * of the workspace (a rename is atomic and can be repeated until the timing fits). The server's
 * file tools may be able to go where the command cannot — another user's workspace hidden from
 * the command, or anything at all on a root server — so they must not follow such a swap.
 *
 * So a file is opened one path component at a time, each relative to the directory opened just
 * before it and never following a link (`/proc/self/fd/<dir>/<name>` with `O_NOFOLLOW`, the
 * `openat` of a process that has no `openat`): every directory on the way is pinned by its open
 * descriptor, and whatever is swapped in meanwhile makes the open fail instead of leading
 * elsewhere. The path given is the resolved one, in which every legitimate link of the
 * workspace has already been replaced by its target, so a link met on the way is a swap.
 *
 * Without `/proc` (not Linux, or a Linux without it mounted) the path is opened directly, with
 * `O_NOFOLLOW` on its last component only — not safe against such swaps; the server warns at
 * start when it runs shell commands there.
 */

const PROC_FD = '/proc/self/fd';
let procFd: boolean | undefined;

/**
 * Linux's `O_PATH`: a descriptor that pins a directory for the walk without needing read
 * permission on it (Node has no constant for it).
 */
const O_PATH = process.platform === 'linux' ? 0o10000000 : 0;

/**
 * Whether workspace files can be opened without following a swapped link (`/proc/self/fd` is
 * there). Without it, a command running in a workspace at the same time could lead the file
 * tools out of it.
 */
export function canOpenBeneath(): boolean {
  procFd ??= existsSync(PROC_FD);
  return procFd;
}

/** The components of a resolved path relative to the workspace root; `[]` for the root itself. */
function componentsOf(relativePath: string): string[] {
  const parts = relativePath.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw Object.assign(new Error(`'..' in a resolved path: ${relativePath}`), { code: 'EINVAL' });
  return parts;
}

/**
 * Opens the directory `relativeDir` of the workspace `root` (a real path), component by
 * component, never following a link; with `create`, missing directories are made on the way
 * (as `mkdir -p` would, but inside the pinned parent). Rejects with the errno error of the step
 * that failed: `ELOOP` or `ENOTDIR` for a link where a directory was expected.
 */
export async function openDirectoryBeneath(root: string, relativeDir: string, create = false): Promise<FileHandle> {
  const parts = componentsOf(relativeDir);
  if (!canOpenBeneath()) {
    const target = path.join(root, ...parts);
    if (create) await fs.mkdir(target, { recursive: true });
    return fs.open(target, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
  }
  let dir = await fs.open(root, O_PATH | fsConstants.O_DIRECTORY);
  try {
    for (const part of parts) {
      const entry = `${PROC_FD}/${dir.fd}/${part}`;
      if (create) {
        await fs.mkdir(entry).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'EEXIST') throw error;
        });
      }
      const next = await fs.open(entry, O_PATH | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW).catch(async (error: NodeJS.ErrnoException) => {
        // A link refused by O_DIRECTORY|O_NOFOLLOW reads as "not a directory": say what it is.
        if (error.code === 'ENOTDIR' && (await fs.lstat(entry).catch(() => null))?.isSymbolicLink()) error.code = 'ELOOP';
        throw error;
      });
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (error) {
    await dir.close().catch(() => undefined);
    throw error;
  }
}

/**
 * Opens the file `relativePath` of the workspace `root` with `flags` (`O_NOFOLLOW` is added),
 * its directories pinned on the way as `openDirectoryBeneath` does; `createDirectories` makes
 * missing parent directories first.
 */
export async function openFileBeneath(
  root: string,
  relativePath: string,
  flags: number,
  options: { createDirectories?: boolean } = {},
): Promise<FileHandle> {
  const parts = componentsOf(relativePath);
  const name = parts.pop();
  if (name === undefined) throw Object.assign(new Error('the workspace itself is not a file'), { code: 'EISDIR' });
  const dir = await openDirectoryBeneath(root, parts.join('/'), options.createDirectories ?? false);
  try {
    const entry = canOpenBeneath() ? `${PROC_FD}/${dir.fd}/${name}` : path.join(root, ...parts, name);
    return await fs.open(entry, flags | fsConstants.O_NOFOLLOW, 0o666);
  } finally {
    await dir.close();
  }
}

/**
 * The entries of the directory `relativeDir` of the workspace `root`, read through a descriptor
 * opened by `openDirectoryBeneath`: the directory listed is the one reached without following
 * links, whatever its path names by the time it is read.
 */
export async function listDirectoryBeneath(root: string, relativeDir: string): Promise<Dirent[]> {
  const dir = await openDirectoryBeneath(root, relativeDir);
  try {
    return await fs.readdir(canOpenBeneath() ? `${PROC_FD}/${dir.fd}` : path.join(root, ...componentsOf(relativeDir)), { withFileTypes: true });
  } finally {
    await dir.close();
  }
}
