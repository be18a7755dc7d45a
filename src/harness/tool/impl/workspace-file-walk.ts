import * as fs from 'node:fs';
import { constants as fsConstants, type Dirent } from 'node:fs';
import * as path from 'node:path';

import { closeQuietly, openFileBeneath, PinnedDirectory, type Descriptor } from '../workspace-open';
import { isInside, toRelative } from '../workspace-path';

/** Directories never searched: dependency trees and VCS internals drown every result. */
export const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set(['node_modules', '.git']);

/** Default number of directory entries one walk looks at before giving up. */
export const DEFAULT_MAX_WALK_ENTRIES = 100_000;

/** Default of `WorkspaceFileWalkOptions.maxOpenDirectories`. */
export const DEFAULT_MAX_OPEN_DIRECTORIES = 64;

/**
 * Entries handled between two turns given to the event loop: the walk's system calls are
 * synchronous (`workspace-open.ts`), so without these turns a walk, and the caller's work on each
 * file it yields, would run as one task however large the tree.
 */
const ENTRIES_PER_TURN = 1_000;

/** Options of `WorkspaceFileWalk`. */
export interface WorkspaceFileWalkOptions {
  /** Most directory entries looked at (default `DEFAULT_MAX_WALK_ENTRIES`); then `limitReached`. */
  maxEntries?: number;
  /**
   * Asked before each directory and each entry; once it answers `true` the walk ends and
   * `stopped` is set. Callers pass their deadline here: a walk that yields nothing for a long
   * time (a deep tree without files) still ends on time.
   */
  shouldStop?: () => boolean;
  /**
   * Most directories the walk holds open at once (default `DEFAULT_MAX_OPEN_DIRECTORIES`). Only
   * directories with subdirectories still to visit are held; a tree where more of those are
   * nested than this reopens some of them later (see `WorkspaceFileWalk`).
   */
  maxOpenDirectories?: number;
}

/** A file the walk found: a regular file, or a link to a regular file inside the workspace. */
export interface WalkedFile {
  /** Its path relative to the workspace root, `/`-separated. */
  relativePath: string;
  /** Its path relative to the directory the walk started from, `/`-separated. */
  relativeToStart: string;
  /**
   * Opens it read-only and non-blocking, never following a link: a regular file relative to its
   * directory as the walk holds it open, a link's target (resolved when the walk found it) from
   * the workspace root. Callers check the handle (`stat().isFile()`): whatever was swapped in
   * meanwhile is what opens. Call it before asking the walk for the next file.
   */
  open(): Descriptor;
}

/** A directory on the walk's current path. */
interface Frame {
  /** Relative to the workspace root. */
  relativePath: string;
  /** Relative to the start directory; `''` for the start itself. */
  relativeToStart: string;
  /** Its name in its parent directory (unused for the start). */
  name: string;
  /** Held open while subdirectories remain to be opened from it; `null` once closed. */
  directory: PinnedDirectory | null;
  /** Names of its subdirectories to visit, in name order; `next` indexes the next one. */
  subdirectories: string[];
  next: number;
}

const READ_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK;

/**
 * A depth-first walk over the regular files below a directory of the workspace: the files of a
 * directory in name order, then its subdirectories in name order.
 *
 * Security. The start directory is opened from the workspace root without following links
 * (`PinnedDirectory`), and every directory below it from its parent's open descriptor, again
 * without following links: a directory swapped for a link while the walk runs is not entered,
 * and files are opened relative to the directory that was listed. Symlinks are never followed
 * into directories; a symlink to a regular file is yielded only when its target is inside the
 * workspace. `node_modules` and `.git` are skipped, unreadable directories are passed over.
 *
 * Cost. Each directory is opened once, from its parent, so the walk's opens grow with what it
 * visits, not with the square of the depth (opening each directory from the root did: an
 * 800-deep chain of directories took 320 000 opens, 47 s). A directory stays open only while
 * subdirectories remain to be opened from it, and at most `maxOpenDirectories` of those at
 * once (descriptors are a process-wide resource): a tree with more directories nested that each
 * still have a subdirectory pending reopens the ones it closed from the nearest open ancestor when
 * it comes back to them — a cost only such a contrived tree pays, bounded like everything else by
 * `maxEntries` and `shouldStop`. A link to a file costs one `realpath`, proportional to its depth.
 *
 * Limits. The walk stops after `maxEntries` entries (`limitReached`) or once `shouldStop`
 * answers `true` (`stopped`); either way its answer is partial. Directories it opened are closed
 * when it ends, also when the caller stops iterating early.
 */
export class WorkspaceFileWalk {
  /** Set when the walk stopped at `maxEntries` before seeing everything. */
  limitReached = false;
  /** Set when the walk ended because `shouldStop` said so. */
  stopped = false;
  /** How many directories the walk has opened, reopened ones included. */
  directoriesOpened = 0;
  private visited = 0;
  private readonly maxEntries: number;
  private readonly shouldStop: () => boolean;
  private readonly maxOpenDirectories: number;

  constructor(
    private readonly workspaceRoot: string,
    options: WorkspaceFileWalkOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_WALK_ENTRIES;
    this.shouldStop = options.shouldStop ?? (() => false);
    this.maxOpenDirectories = Math.max(1, options.maxOpenDirectories ?? DEFAULT_MAX_OPEN_DIRECTORIES);
  }

  /**
   * The files below `start`, a directory given relative to the workspace root (`.` for the root).
   * With `within` (a `/`-separated path of directories relative to `start`), only the files below
   * it: the walk goes down to it as it would anyway — each directory from its parent, never
   * through a link, never into `node_modules` or `.git` — without listing the directories on the
   * way; `relativeToStart` stays relative to `start`.
   */
  async *files(start: string, within = ''): AsyncGenerator<WalkedFile> {
    const stack: Frame[] = [];
    try {
      if (this.checkStop()) return;
      const startPath = start === '.' ? '' : start;
      const descent = within.split('/').filter((name) => name !== '');
      if (descent.some((name) => SKIPPED_DIRECTORIES.has(name))) return;
      let directory: PinnedDirectory;
      try {
        directory = this.openStart(startPath);
      } catch {
        return;
      }
      let relativeToStart = '';
      for (const name of descent) {
        try {
          const below = directory.openDirectory(name);
          this.directoriesOpened++;
          directory.close();
          directory = below;
        } catch {
          closeQuietly(directory);
          return;
        }
        relativeToStart = joinRelative(relativeToStart, name);
      }
      stack.push({ relativePath: joinRelative(startPath, relativeToStart), relativeToStart, name: '', directory, subdirectories: [], next: 0 });
      let listNext = true;
      while (stack.length > 0) {
        const top = stack[stack.length - 1];
        if (listNext) {
          listNext = false;
          const finished = yield* this.list(top);
          if (finished) return;
        }
        if (top.next >= top.subdirectories.length) {
          stack.pop();
          closeDirectory(top);
          continue;
        }
        if (this.checkStop()) return;
        const name = top.subdirectories[top.next++];
        const parent = this.directoryOfTop(stack);
        if (parent === null) {
          top.next = top.subdirectories.length;
          continue;
        }
        let child: PinnedDirectory;
        try {
          child = parent.openDirectory(name);
          this.directoriesOpened++;
        } catch {
          continue; // gone, or swapped for a link or a file since it was listed
        }
        // A directory whose last subdirectory is open is not needed any more.
        if (top.next >= top.subdirectories.length) closeDirectory(top);
        stack.push({
          relativePath: joinRelative(top.relativePath, name),
          relativeToStart: joinRelative(top.relativeToStart, name),
          name,
          directory: child,
          subdirectories: [],
          next: 0,
        });
        // Only the deepest `maxOpenDirectories` frames may hold their directory open: the walk
        // needs those first when it comes back up.
        const outsideWindow = stack[stack.length - 1 - this.maxOpenDirectories];
        if (outsideWindow) closeDirectory(outsideWindow);
        listNext = true;
      }
    } finally {
      stack.forEach(closeDirectory);
    }
  }

  /**
   * Lists the directory of `frame` (open), yielding its files and recording its subdirectories.
   * Returns `true` when the walk must end (limit reached or stopped).
   */
  private async *list(frame: Frame): AsyncGenerator<WalkedFile, boolean> {
    const directory = frame.directory as PinnedDirectory;
    let entries: Dirent[];
    try {
      entries = directory.list();
    } catch {
      return false; // unreadable: passed over
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (this.checkStop()) return true;
      if (++this.visited > this.maxEntries) {
        this.limitReached = true;
        return true;
      }
      if (this.visited % ENTRIES_PER_TURN === 0) await new Promise<void>((resolve) => setImmediate(resolve));
      const relativePath = joinRelative(frame.relativePath, entry.name);
      const relativeToStart = joinRelative(frame.relativeToStart, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRECTORIES.has(entry.name)) frame.subdirectories.push(entry.name);
      } else if (entry.isFile()) {
        yield { relativePath, relativeToStart, open: () => directory.openFile(entry.name, READ_FLAGS) };
      } else if (entry.isSymbolicLink()) {
        const target = this.fileLinkTarget(relativePath);
        if (target !== null) yield { relativePath, relativeToStart, open: () => openFileBeneath(this.workspaceRoot, target, READ_FLAGS) };
      }
    }
    return false;
  }

  private checkStop(): boolean {
    if (!this.stopped && this.shouldStop()) this.stopped = true;
    return this.stopped;
  }

  private openStart(relativePath: string): PinnedDirectory {
    const directory = PinnedDirectory.open(this.workspaceRoot, relativePath || '.');
    this.directoriesOpened++;
    return directory;
  }

  /**
   * The open directory of the top frame, reopened if it was closed to stay within
   * `maxOpenDirectories`: from the nearest open ancestor (or the start, from the root), one
   * directory at a time. Reopened ancestors that still have subdirectories pending stay open, as
   * far as the limit allows, for when the walk comes back to them. `null` when it cannot be
   * reopened (gone or swapped meanwhile): its remaining subdirectories are then skipped.
   */
  private directoryOfTop(stack: Frame[]): PinnedDirectory | null {
    const index = stack.length - 1;
    if (stack[index].directory) return stack[index].directory;
    let level = index - 1;
    while (level >= 0 && stack[level].directory === null) level--;
    let current: PinnedDirectory;
    if (level >= 0) {
      current = stack[level].directory as PinnedDirectory;
    } else {
      try {
        current = this.openStart(stack[0].relativePath);
      } catch {
        return null;
      }
      level = 0;
      this.keepOpen(stack, level, current);
    }
    try {
      while (level < index) {
        const next = current.openDirectory(stack[level + 1].name);
        this.directoriesOpened++;
        if (stack[level].directory !== current) current.close();
        current = next;
        level++;
        this.keepOpen(stack, level, current);
      }
      return current;
    } catch {
      if (stack[level].directory !== current) closeQuietly(current);
      return null;
    }
  }

  /** Stores a reopened directory in its frame if the walk will need it: the top, or a pending ancestor within the limit. */
  private keepOpen(stack: Frame[], level: number, directory: PinnedDirectory): void {
    const top = stack.length - 1;
    if (level === top || (hasPending(stack[level]) && level > top - this.maxOpenDirectories)) stack[level].directory = directory;
  }

  /** The target of a link to a regular file inside the workspace, relative to its root; `null` otherwise. */
  private fileLinkTarget(relativePath: string): string | null {
    try {
      const target = fs.realpathSync.native(path.join(this.workspaceRoot, relativePath));
      if (!isInside(this.workspaceRoot, target) || !fs.statSync(target).isFile()) return null;
      return toRelative(this.workspaceRoot, target);
    } catch {
      return null;
    }
  }
}

function hasPending(frame: Frame): boolean {
  return frame.next < frame.subdirectories.length;
}

function closeDirectory(frame: Frame): void {
  const directory = frame.directory;
  frame.directory = null;
  closeQuietly(directory);
}

/** `parent/child` of two relative paths, either of which may be `''`. */
function joinRelative(parent: string, child: string): string {
  if (parent === '') return child;
  return child === '' ? parent : `${parent}/${child}`;
}
