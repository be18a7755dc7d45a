import * as fs from 'node:fs';
import { constants as fsConstants, type Dirent } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';

import { isSymbolicLink } from './workspace-path';

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
 *
 * The system calls are made synchronously, on the thread that runs the tool, except the `open`
 * that creates a file. Opening, reading, `fstat` and closing an existing file take a few
 * microseconds each on a local disk, and a file tool makes a handful (a `read_file` of
 * `notes/a.md`: open `notes`, open the file, close `notes`, `fstat`, read, close); the same calls
 * through `fs/promises` hand each to libuv's thread pool and back — several times the main
 * thread's work per call, a pool thread woken per call, a promise and a callback per step — and
 * that hand-off was a quarter of the main thread's time under the load of `npm run bench` (100
 * sessions of file tools at once, docs/performance.md). Making an inode costs more: ext4 took
 * 30–530 µs per new file or directory on the machine of that benchmark. A new file is made in
 * the pool (`createFileBeneath`), where that wait does not hold the event loop. A missing
 * directory is made here: it is made once, where in the pool each of a round's parallel calls
 * into a new directory would send its own `mkdir` (ten `write_file` into `notes/`: ten, nine of
 * them failing); the load's waves were shortest this way. What a synchronous step may hold the
 * thread for is bounded otherwise: reads go in chunks of at most 64 KiB (`readAtMost`,
 * `read_file`), and walks give the event loop a turn every thousand entries. Workspaces are
 * meant to be on a local disk, as the SQLite store is, whose calls are synchronous too: a disk
 * that hangs stops the server either way.
 */

const PROC_FD = '/proc/self/fd';
let procFd: boolean | undefined;

/**
 * Linux's `O_PATH`: a descriptor that pins a directory for the walk without needing read
 * permission on it (Node has no constant for it).
 */
const O_PATH = process.platform === 'linux' ? 0o10000000 : 0;

/**
 * An open descriptor of a workspace file or directory, used synchronously (see above). Its
 * opener closes it (`close()`, in a `finally`): nothing closes it for them. Once closed, `fd` is
 * -1, so no path is ever built from a number that may already name another file.
 */
export class Descriptor {
  constructor(private current: number) {}

  get fd(): number {
    return this.current;
  }

  stat(): fs.Stats {
    return fs.fstatSync(this.fd);
  }

  /** Reads at most `length` bytes at `position` into `buffer` (at `offset`); answers how many it read (0 at the end). */
  read(buffer: Buffer, offset: number, length: number, position: number): number {
    return fs.readSync(this.fd, buffer, offset, length, position);
  }

  /** Writes all of `text` (UTF-8) at the descriptor's offset. */
  writeText(text: string): void {
    fs.writeFileSync(this.fd, text, 'utf8');
  }

  truncate(length = 0): void {
    fs.ftruncateSync(this.fd, length);
  }

  /** Closes it; a second call does nothing. */
  close(): void {
    const fd = this.current;
    if (fd < 0) return;
    this.current = -1;
    fs.closeSync(fd);
  }
}

/** Opens `target` with `flags` as a `Descriptor`. */
function openDescriptor(target: string, flags: number, mode?: number): Descriptor {
  return new Descriptor(fs.openSync(target, flags, mode));
}

/** `open(2)` in libuv's pool, answering the bare descriptor (`fs/promises` would wrap it in a `FileHandle`). */
const openInPool = promisify(fs.open) as (target: string, flags: number, mode: number) => Promise<number>;

/** Closes `descriptor` while another error is on its way out: a failure to close is not the one to report. */
export function closeQuietly(descriptor: { close(): void } | null | undefined): void {
  try {
    descriptor?.close();
  } catch {
    // the error being reported is the one that matters
  }
}

/**
 * Whether workspace files can be opened without following a swapped link (`/proc/self/fd` is
 * there). Without it, a command running in a workspace at the same time could lead the file
 * tools out of it.
 */
export function canOpenBeneath(): boolean {
  procFd ??= fs.existsSync(PROC_FD);
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
 * (as `mkdir -p` would, but inside the pinned parent). Throws the errno error of the step that
 * failed: `ELOOP` or `ENOTDIR` for a link where a directory was expected, `ENOENT` for a
 * missing one.
 */
export function openDirectoryBeneath(root: string, relativeDir: string, create = false): Descriptor {
  const parts = componentsOf(relativeDir);
  if (!canOpenBeneath()) {
    const target = path.join(root, ...parts);
    if (create) fs.mkdirSync(target, { recursive: true });
    return openDescriptor(target, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
  }
  // The root is trusted as it is named (it is the workspace's real path); its first component is
  // opened from that path, as it would be from a descriptor of the root: `O_NOFOLLOW` guards the
  // last component of a path only, which here is the one that needs it. One open and one close
  // fewer per call than pinning the root first.
  if (parts.length === 0) return openDescriptor(root, O_PATH | fsConstants.O_DIRECTORY);
  let dir: Descriptor | null = null;
  try {
    for (const part of parts) {
      const next = openDirectoryEntry(dir === null ? path.join(root, part) : `${PROC_FD}/${dir.fd}/${part}`, create);
      dir?.close();
      dir = next;
    }
    return dir as Descriptor;
  } catch (error) {
    closeQuietly(dir);
    throw error;
  }
}

/**
 * Opens the directory at `entry` (`/proc/self/fd/<parent>/<name>`, or the root's path and its
 * first component) as an `O_PATH` descriptor without following a link; with `create`, a missing
 * one is made, then opened. A link refused by `O_DIRECTORY|O_NOFOLLOW` reads as "not a
 * directory"; it is reported as `ELOOP`, what it is.
 */
function openDirectoryEntry(entry: string, create: boolean): Descriptor {
  const open = (): Descriptor => {
    try {
      return openDescriptor(entry, O_PATH | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOTDIR' && isSymbolicLink(entry)) (error as NodeJS.ErrnoException).code = 'ELOOP';
      throw error;
    }
  };
  if (!create) return open();
  // Most directories on the way exist: opening first spares them a `mkdir` that fails.
  try {
    return open();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  try {
    fs.mkdirSync(entry);
  } catch (error) {
    // Made meanwhile by somebody else: opened below all the same.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return open();
}

/** The directory components and the file name of a file's path relative to the workspace root. */
function fileComponents(relativePath: string): { directory: string; name: string } {
  const parts = componentsOf(relativePath);
  const name = parts.pop();
  if (name === undefined) throw Object.assign(new Error('the workspace itself is not a file'), { code: 'EISDIR' });
  return { directory: parts.join('/'), name: entryName(name) };
}

/**
 * Opens the file `relativePath` of the workspace `root` with `flags` (`O_NOFOLLOW` is added),
 * its directories pinned on the way as `openDirectoryBeneath` does.
 */
export function openFileBeneath(root: string, relativePath: string, flags: number): Descriptor {
  const { directory, name } = fileComponents(relativePath);
  // A file at the top of the workspace is opened from the root's path, as its first directory is
  // (see `openDirectoryBeneath`).
  if (directory === '' && canOpenBeneath()) return openDescriptor(path.join(root, name), flags | fsConstants.O_NOFOLLOW, 0o666);
  const dir = PinnedDirectory.open(root, directory);
  try {
    return dir.openFile(name, flags);
  } finally {
    dir.close();
  }
}

/**
 * As `openFileBeneath` with `O_CREAT` added: a missing file is created, and so are missing
 * directories on its way. An existing file is opened at once; a new one is made in libuv's pool
 * (see above).
 */
export async function createFileBeneath(root: string, relativePath: string, flags: number): Promise<Descriptor> {
  const { directory, name } = fileComponents(relativePath);
  if (directory === '' && canOpenBeneath()) return openOrCreate(path.join(root, name), flags);
  const dir = PinnedDirectory.open(root, directory, true);
  try {
    return await dir.createFile(name, flags);
  } finally {
    dir.close();
  }
}

/** Opens the file at `entry` if it exists, else creates it in libuv's pool; never follows a link. */
async function openOrCreate(entry: string, flags: number): Promise<Descriptor> {
  const noFollow = flags | fsConstants.O_NOFOLLOW;
  try {
    return openDescriptor(entry, noFollow & ~fsConstants.O_CREAT);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return new Descriptor(await openInPool(entry, noFollow | fsConstants.O_CREAT, 0o666));
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
    private readonly descriptor: Descriptor,
    /** Its path when it was opened; used for its entries only without `/proc`. */
    private readonly pathWithoutProc: string,
  ) {}

  /** Opens the directory `relativeDir` of the workspace `root` as `openDirectoryBeneath` does (with `create`, making what is missing). */
  static open(root: string, relativeDir: string, create = false): PinnedDirectory {
    return new PinnedDirectory(openDirectoryBeneath(root, relativeDir, create), path.join(root, ...componentsOf(relativeDir)));
  }

  /**
   * Opens its entry `name` as a directory without following a link; throws `ELOOP` for a link
   * and `ENOTDIR` for anything else that is not a directory.
   */
  openDirectory(name: string): PinnedDirectory {
    const entry = this.entry(name);
    const descriptor = canOpenBeneath()
      ? openDirectoryEntry(entry, false)
      : openDescriptor(entry, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW);
    return new PinnedDirectory(descriptor, path.join(this.pathWithoutProc, name));
  }

  /** Opens its entry `name` with `flags` (`O_NOFOLLOW` is added, so a link is refused with `ELOOP`). */
  openFile(name: string, flags: number): Descriptor {
    return openDescriptor(this.entry(name), flags | fsConstants.O_NOFOLLOW, 0o666);
  }

  /** As `openFile`, creating the entry (in libuv's pool) when it is missing. */
  createFile(name: string, flags: number): Promise<Descriptor> {
    return openOrCreate(this.entry(name), flags);
  }

  /** Its entries, read through the descriptor. */
  list(): Dirent[] {
    return fs.readdirSync(canOpenBeneath() ? this.descriptorPath() : this.pathWithoutProc, { withFileTypes: true });
  }

  close(): void {
    this.descriptor.close();
  }

  /** The path that opens its entry `name`: one component, never `.` or `..`. */
  private entry(name: string): string {
    entryName(name);
    return canOpenBeneath() ? `${this.descriptorPath()}/${name}` : path.join(this.pathWithoutProc, name);
  }

  /** `/proc/self/fd/<fd>` of its descriptor. */
  private descriptorPath(): string {
    // Once closed, its number may already name another file: never build a path from it.
    if (this.descriptor.fd < 0) throw Object.assign(new Error('the directory was closed'), { code: 'EBADF' });
    return `${PROC_FD}/${this.descriptor.fd}`;
  }
}
