import { constants as fsConstants } from 'node:fs';

import { canOpenBeneath, closeQuietly, createFileBeneath, openFileBeneath, type Descriptor } from '../workspace-open';
import { locateInWorkspace, resolveInWorkspace } from '../workspace-path';
import { describeFsError } from './fs-error-message';

/**
 * How `openRegularFile` opens: to read; to read and then replace the content (`edit`, which
 * leaves the content as it is at open); to replace an existing file's content; or to create or
 * replace one.
 */
export type RegularFileAccess = 'read' | 'edit' | 'overwrite' | 'create';

/**
 * Without `O_TRUNC`: a file is emptied only once it is known to be the regular file it should be.
 * `create` adds `O_CREAT` when the file is missing (`createFileBeneath`).
 */
const OPEN_FLAGS: Record<RegularFileAccess, number> = {
  read: fsConstants.O_RDONLY,
  edit: fsConstants.O_RDWR,
  overwrite: fsConstants.O_WRONLY,
  create: fsConstants.O_WRONLY,
};

/** A file of the workspace as `resolveInWorkspace` resolved it. */
export interface ResolvedWorkspaceFile {
  /** The workspace's real path. */
  workspace: string;
  /** The file's resolved path relative to it. */
  relativePath: string;
}

/**
 * Opens a workspace file only if it is a regular file, or answers the error to give the model.
 *
 * - The file is reached through `openFileBeneath`: every directory on the way is opened without
 *   following links, so a directory swapped for a link since `resolveInWorkspace` checked the
 *   path makes the open fail instead of leading out of the workspace.
 * - Reading or writing a FIFO or a device would block the call until some other process opened
 *   its other end, so the file is opened with `O_NONBLOCK` (which changes nothing for a regular
 *   file) and then checked on the open handle itself. A FIFO without a reader refuses a
 *   non-blocking write open (`ENXIO`); that is answered as not a regular file too.
 * - Writing opens without `O_TRUNC` and empties the file after that check (`edit` leaves the
 *   emptying to its caller, once it has read the file). A file that is already empty (a new one)
 *   is not truncated: on ext4 a truncation to zero makes the file's close start writing it out at
 *   once (`auto_da_alloc`), which cost every new file a flush.
 * - `create` makes the file and missing parent directories, inside the pinned parents
 *   (`createFileBeneath`).
 * - `directoryError` gives the answer when the path is a directory (default: that it is one);
 *   it is asked only then.
 */
export async function openRegularFile(
  file: ResolvedWorkspaceFile,
  shown: string,
  access: RegularFileAccess,
  options: Pick<OpenWorkspaceFileOptions, 'directoryError'> = {},
): Promise<{ ok: true; handle: Descriptor; size: number } | { ok: false; error: string }> {
  const directoryError = () => options.directoryError?.(shown) ?? `'${shown}' is a directory`;
  let handle: Descriptor;
  try {
    const flags = OPEN_FLAGS[access] | fsConstants.O_NONBLOCK;
    handle = access === 'create' ? await createFileBeneath(file.workspace, file.relativePath, flags) : openFileBeneath(file.workspace, file.relativePath, flags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | null)?.code;
    if (code === 'EISDIR' && options.directoryError !== undefined) return { ok: false, error: directoryError() };
    if (code === 'ENXIO') return { ok: false, error: `'${shown}' is not a regular file` };
    if (code === 'ELOOP') return { ok: false, error: `'${shown}' changed while it was being opened (a link appeared on its path)` };
    return { ok: false, error: describeFsError(error, shown) };
  }
  try {
    const stat = handle.stat();
    if (!stat.isFile()) {
      handle.close();
      return { ok: false, error: stat.isDirectory() ? directoryError() : `'${shown}' is not a regular file` };
    }
    const keeps = access === 'read' || access === 'edit';
    if (!keeps && stat.size > 0) handle.truncate(0);
    return { ok: true, handle, size: keeps ? stat.size : 0 };
  } catch (error) {
    closeQuietly(handle);
    return { ok: false, error: describeFsError(error, shown) };
  }
}

/** An open workspace file as `openWorkspaceFile` answers it: `shown` is its path relative to the workspace. */
export type OpenedWorkspaceFile = { ok: true; handle: Descriptor; size: number; shown: string } | { ok: false; error: string };

export interface OpenWorkspaceFileOptions {
  /** The answer when the path is a directory; it is given the path as shown (default: that it is one). */
  directoryError?: (shown: string) => string;
  /** The answer when the path names the workspace itself (default: as for any directory). */
  workspaceError?: string;
}

/**
 * Opens the file a model named (`requested`, relative to the session workspace) as
 * `openRegularFile` does, confined to the workspace as `resolveInWorkspace` confines it.
 *
 * Most paths have no link on their way, and for those the path as written (`locateInWorkspace`)
 * is the resolved one: it is opened directly, with the walk that refuses links, and nothing
 * else is looked up. When that open fails — a link on the way (`ELOOP`), a missing file or any
 * other error — the path is resolved (`resolveInWorkspace`, links inside the workspace followed,
 * links leading out refused) and opened again, so the answer, and its error message, are the
 * ones the resolved path gets. A `create` that failed on its way leaves nothing the resolved open
 * would not have made: directories are made only below a missing one, where no link can be.
 * Where the walk cannot refuse links (no `/proc`), every path is resolved first, as before.
 */
export async function openWorkspaceFile(
  workspace: string,
  requested: string,
  access: RegularFileAccess,
  options: OpenWorkspaceFileOptions = {},
): Promise<OpenedWorkspaceFile> {
  const located = locateInWorkspace(workspace, requested);
  if (!located.ok) return located;
  // Without `/proc` the walk follows links on the way (`workspace-open.ts`): every path is resolved first.
  if (located.relativePath !== '.' && canOpenBeneath()) {
    const quick = await openRegularFile(located, located.relativePath, access, options);
    if (quick.ok) return { ...quick, shown: located.relativePath };
  }
  const resolved = resolveInWorkspace(workspace, requested);
  if (!resolved.ok) return resolved;
  const shown = resolved.relativePath;
  if (shown === '.' && options.workspaceError !== undefined) return { ok: false, error: options.workspaceError };
  const opened = await openRegularFile(resolved, shown, access, options);
  return opened.ok ? { ...opened, shown } : opened;
}

/**
 * Whether a read of a regular file that returned `bytesRead` of the `requested` bytes, `total`
 * read so far, reached the end: a short read there ends at the end of the file, which spares the
 * read that would return nothing. The file's size when it was opened must have been reached too:
 * some file systems (FUSE with direct I/O) may answer short before the end, and a file that
 * grew since it was opened is read on until a read returns nothing.
 */
export function readReachedEnd(bytesRead: number, requested: number, total: number, sizeAtOpen: number): boolean {
  return bytesRead === 0 || (bytesRead < requested && total >= sizeAtOpen);
}

/**
 * The whole content of an open regular file if it has at most `maxBytes`, else `null`. Reads
 * with its own bound rather than trusting the size seen at open (`sizeAtOpen`, which only tells
 * when a short read is the end: `readReachedEnd`): a file that grows meanwhile (a command
 * appending to it) is not read past `maxBytes + 1` bytes.
 */
export function readAtMost(handle: Descriptor, maxBytes: number, sizeAtOpen: number): Buffer | null {
  // Every byte used is one a read filled: no need to zero it first.
  const buffer = Buffer.allocUnsafe(Math.min(maxBytes + 1, 64 * 1024));
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const requested = Math.min(buffer.length, maxBytes + 1 - total);
    const bytesRead = handle.read(buffer, 0, requested, total);
    if (bytesRead > 0) chunks.push(Buffer.from(buffer.subarray(0, bytesRead)));
    total += bytesRead;
    if (total > maxBytes) return null;
    if (readReachedEnd(bytesRead, requested, total, sizeAtOpen)) return Buffer.concat(chunks, total);
  }
}
