import type { Dirent } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

import { listDirectoryBeneath } from '../workspace-open';
import { isInside, toRelative } from '../workspace-path';

/** Directories never searched: dependency trees and VCS internals drown every result. */
export const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set(['node_modules', '.git']);

/** Default number of directory entries one walk looks at before giving up. */
export const DEFAULT_MAX_WALK_ENTRIES = 100_000;

/**
 * A depth-first walk over the regular files below a directory of the workspace, in name order.
 * Each directory is opened from the workspace root without following links
 * (`listDirectoryBeneath`), so a directory swapped for a link while the walk runs is not listed.
 * Symlinks are never followed into directories; a symlink to a regular file is yielded only when
 * its target is inside the workspace. `node_modules` and `.git` are skipped, unreadable
 * directories are passed over, and the walk stops after `maxEntries` entries
 * (`limitReached` then tells the caller its answer is partial).
 */
export class WorkspaceFileWalk {
  /** Set when the walk stopped at `maxEntries` before seeing everything. */
  limitReached = false;
  private visited = 0;

  constructor(
    private readonly workspaceRoot: string,
    private readonly maxEntries: number = DEFAULT_MAX_WALK_ENTRIES,
  ) {}

  /** Absolute paths of the files below `directory` (an absolute, real path in the workspace). */
  async *files(directory: string): AsyncGenerator<string> {
    const pending = [directory];
    while (pending.length > 0) {
      const current = pending.pop() as string;
      let entries: Dirent[];
      try {
        entries = await listDirectoryBeneath(this.workspaceRoot, toRelative(this.workspaceRoot, current));
      } catch {
        continue;
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const subdirectories: string[] = [];
      for (const entry of entries) {
        if (++this.visited > this.maxEntries) {
          this.limitReached = true;
          return;
        }
        const full = path.join(current, entry.name);
        if (entry.isDirectory()) {
          if (!SKIPPED_DIRECTORIES.has(entry.name)) subdirectories.push(full);
        } else if (entry.isFile()) {
          yield full;
        } else if (entry.isSymbolicLink() && (await this.isFileLinkInside(full))) {
          yield full;
        }
      }
      for (let i = subdirectories.length - 1; i >= 0; i--) pending.push(subdirectories[i]);
    }
  }

  private async isFileLinkInside(link: string): Promise<boolean> {
    try {
      const target = await fs.realpath(link);
      return isInside(this.workspaceRoot, target) && (await fs.stat(target)).isFile();
    } catch {
      return false;
    }
  }
}
