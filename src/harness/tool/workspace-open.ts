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

/** `name` if it names one entry of a directory (never `.` or `..`); else throws `EINVAL`. */
function entryName(name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw Object.assign(new Error(`not an entry name: '${name}'`), { code: 'EINVAL' });
  }
  return name;
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
  // The root is trusted as it is named (it is the workspace's real path); its first component is
  // opened from that path, as it would be from a descriptor of the root: `O_NOFOLLOW` guards the
  // last component of a path only, which here is the one that needs it. One open and one close
  // fewer per call than pinning the root first.
  const [first, ...rest] = parts;
  if (first === undefined) return fs.open(root, O_PATH | fsConstants.O_DIRECTORY);
  let dir = await openDirectoryEntry(path.join(root, first), create);
  try {
    for (const part of rest) {
      const next = await openDirectoryEntry(`${PROC_FD}/${dir.fd}/${part}`, create);
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
 * Opens the directory at `entry` (`/proc/self/fd/<parent>/<name>`, or the root's path and its
 * first component) as an `O_PATH` descriptor without following a link; with `create`, a missing
 * one is made, then opened. A link refused by `O_DIRECTORY|O_NOFOLLOW` reads as "not a
 * directory"; it is reported as `ELOOP`, what it is.
 */
async function openDirectoryEntry(entry: string, create: boolean): Promise<FileHandle> {
  const open = () =>
    fs.open(entry, O_PATH | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOTDIR' && (await fs.lstat(entry).catch(() => null))?.isSymbolicLink()) error.code = 'ELOOP';
      throw error;
    });
  if (!create) return open();
  // Most directories on the way exist: opening first spares them a `mkdir` that fails.
  try {
    return await open();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await fs.mkdir(entry).catch((error: NodeJS.ErrnoException) => {
    // Made meanwhile by somebody else: opened below all the same.
    if (error.code !== 'EEXIST') throw error;
  });
  return open();
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
  // A file at the top of the workspace is opened from the root's path, as its first directory is
  // (see `openDirectoryBeneath`).
  if (parts.length === 0 && canOpenBeneath()) return fs.open(path.join(root, entryName(name)), flags | fsConstants.O_NOFOLLOW, 0o666);
  const dir = await PinnedDirectory.open(root, parts.join('/'), options.createDirectories ?? false);
  try {
    return await dir.openFile(name, flags);
  } finally {
    await dir.close();
  }
}

/**
 * A directory of a workspace, reached without following links and held open, whose entries are
 * opened relative to it (`/proc/self/fd/<fd>/<name>`, never following a link). A walk over a tree
 * opens each directory once, from its parent: opening every directory from the workspace root
 * instead costs one open per component of its path, which grows with the square of the depth
 * (an 800-deep chain took 320 000 opens). The directory stays the one that was opened whatever
 * its path names meanwhile; a link swapped in for one of its entries makes that entry's open
 * fail. Without `/proc` it names its entries by path, as `openDirectoryBeneath` does there.
 * Each instance holds a descriptor until `close()`.
 */
export class PinnedDirectory {
  private constructor(
    private readonly handle: FileHandle,
    /** Its path when it was opened; used for its entries only without `/proc`. */
    private readonly pathWithoutProc: string,
  ) {}

  /** Opens the directory `relativeDir` of the workspace `root` as `openDirectoryBeneath` does. */
  static async open(root: string, relativeDir: string, create = false): Promise<PinnedDirectory> {
    const handle = await openDirectoryBeneath(root, relativeDir, create);
    return new PinnedDirectory(handle, path.join(root, ...componentsOf(relativeDir)));
  }

  /**
   * Opens its entry `name` as a directory without following a link; rejects with `ELOOP` for a
   * link and `ENOTDIR` for anything else that is not a directory.
   */
  async openDirectory(name: string): Promise<PinnedDirectory> {
    const entry = this.entry(name);
    const handle = canOpenBeneath()
      ? await openDirectoryEntry(entry, false)
      : await fs.open(entry, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
    return new PinnedDirectory(handle, path.join(this.pathWithoutProc, name));
  }

  /** Opens its entry `name` with `flags` (`O_NOFOLLOW` is added, so a link is refused with `ELOOP`). */
  async openFile(name: string, flags: number): Promise<FileHandle> {
    return fs.open(this.entry(name), flags | fsConstants.O_NOFOLLOW, 0o666);
  }

  /** Its entries, read through the descriptor. */
  async list(): Promise<Dirent[]> {
    return fs.readdir(canOpenBeneath() ? this.descriptorPath() : this.pathWithoutProc, { withFileTypes: true });
  }

  close(): Promise<void> {
    return this.handle.close();
  }

  /** The path that opens its entry `name`: one component, never `.` or `..`. */
  private entry(name: string): string {
    entryName(name);
    return canOpenBeneath() ? `${this.descriptorPath()}/${name}` : path.join(this.pathWithoutProc, name);
  }

  /** `/proc/self/fd/<fd>` of its descriptor. */
  private descriptorPath(): string {
    // Once closed, its number may already name another file: never build a path from it.
    if (this.handle.fd < 0) throw Object.assign(new Error('the directory was closed'), { code: 'EBADF' });
    return `${PROC_FD}/${this.handle.fd}`;
  }
}
