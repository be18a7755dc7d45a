import * as fs from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../runtime/error-message';

/** Outcome of `resolveInWorkspace`. */
export type WorkspacePathResult =
  | {
      ok: true;
      /** Absolute path with every existing symlink resolved; inside `workspace`. */
      path: string;
      /** The workspace's own real path (symlinks in it resolved). */
      workspace: string;
      /** `path` relative to `workspace`, with `/` separators; `.` for the workspace itself. */
      relativePath: string;
    }
  | { ok: false; error: string };

/** More links than this while resolving one path is treated as a loop. */
const MAX_SYMLINK_HOPS = 40;

/**
 * Resolves a path a model gave relative to the session workspace and confines it there.
 *
 * Refused: a missing workspace, an absolute path, a path whose `..` leads out, and a path any of
 * whose components is a symlink ending outside the workspace — including a symlinked parent
 * directory and a dangling symlink (whose target would be created outside on write). The part
 * of the path that exists is resolved with `realpath`; dangling links are followed by hand.
 * The path need not exist. The returned path is the resolved one, so callers act on what was
 * checked. The check alone cannot stop a link swapped in between the check and the use: open
 * what it returns with `openFileBeneath` / `openRegularFile` (`workspace-open.ts`), which walk
 * the resolved path without following links. The look-ups are synchronous, as the file tools'
 * system calls are (see `workspace-open.ts`).
 */
export function resolveInWorkspace(workspace: string | null | undefined, relativePath: string): WorkspacePathResult {
  const request = checkedRequest(workspace, relativePath);
  if (!request.ok) return request;

  const root = realWorkspace(request.workspace, true);
  if (root === null) return { ok: false, error: 'the session workspace does not exist' };

  const lexical = path.resolve(root, relativePath);
  if (!isInside(root, lexical)) {
    return { ok: false, error: `path '${relativePath}' is outside the workspace` };
  }
  // The workspace itself: its real path is known already.
  if (lexical === root) return { ok: true, path: root, workspace: root, relativePath: '.' };

  let real: string;
  try {
    real = resolveExisting(lexical, 0);
  } catch (error) {
    if (error instanceof SymlinkLoopError) return { ok: false, error: `path '${relativePath}' has a symlink loop` };
    const reason = errorMessage(error);
    return { ok: false, error: `cannot resolve path '${relativePath}': ${reason}` };
  }
  if (!isInside(root, real)) {
    return { ok: false, error: `path '${relativePath}' leads outside the workspace through a symlink` };
  }
  return { ok: true, path: real, workspace: root, relativePath: toRelative(root, real) };
}

/** Where `locateInWorkspace` puts a path: the workspace's real path and the path below it, as written. */
export type WorkspaceLocation = { ok: true; workspace: string; relativePath: string } | { ok: false; error: string };

/**
 * Where a path a model gave would be in the session workspace if no link were on its way: the
 * workspace's real path (taken once per workspace, see `realWorkspaces`) and the path
 * relative to it with `.` and `..` applied as written — no system call when the workspace was
 * seen before. The refusals that need no look at the files are `resolveInWorkspace`'s.
 *
 * A tool opens the result with the links-refused walk of `workspace-open.ts`, which succeeds only
 * when no component is a link: then this is the path `resolveInWorkspace` would have returned, for
 * two system calls or more fewer. When the walk meets a link, or fails at all, the tool asks
 * `resolveInWorkspace`, whose answer (and error message) is the one that counts
 * (`openWorkspaceFile` in `impl/regular-file.ts`).
 */
export function locateInWorkspace(workspace: string | null | undefined, relativePath: string): WorkspaceLocation {
  const request = checkedRequest(workspace, relativePath);
  if (!request.ok) return request;
  const root = realWorkspace(request.workspace, false);
  if (root === null) return { ok: false, error: 'the session workspace does not exist' };
  const lexical = path.resolve(root, relativePath);
  if (!isInside(root, lexical)) return { ok: false, error: `path '${relativePath}' is outside the workspace` };
  return { ok: true, workspace: root, relativePath: toRelative(root, lexical) };
}

/** The workspace of a request whose workspace and path pass the checks that need no look at the files, or what is wrong. */
function checkedRequest(workspace: string | null | undefined, relativePath: string): { ok: true; workspace: string } | { ok: false; error: string } {
  const refuse = (error: string) => ({ ok: false as const, error });
  if (typeof workspace !== 'string' || workspace.trim() === '') return refuse('no workspace is set for this session');
  if (typeof relativePath !== 'string') return refuse('path must be a string');
  if (relativePath === '') return refuse('path must not be empty');
  if (relativePath.includes('\0')) return refuse('path must not contain NUL characters');
  if (path.isAbsolute(relativePath)) {
    return refuse(`absolute paths are not allowed ('${relativePath}'); give a path relative to the workspace`);
  }
  return { ok: true, workspace };
}

/**
 * The real paths of the workspaces seen lately, by the path the session names. A workspace's
 * real path changes only when a directory on its way is replaced by a link or a link is
 * re-pointed, which the server does not do; `resolveInWorkspace` (every tool's answer once a
 * quick open failed) takes it afresh and updates it here. Bounded: the oldest go first.
 */
const realWorkspaces = new Map<string, string>();
const REAL_WORKSPACES_KEPT = 512;

/** The workspace's real path — the one remembered, or (`fresh`, or none yet) taken now — or `null` when it does not exist. */
function realWorkspace(workspace: string, fresh: boolean): string | null {
  const known = fresh ? undefined : realWorkspaces.get(workspace);
  if (known !== undefined) return known;
  realWorkspaces.delete(workspace);
  let root: string;
  try {
    root = fs.realpathSync.native(workspace);
  } catch {
    return null;
  }
  realWorkspaces.set(workspace, root);
  if (realWorkspaces.size > REAL_WORKSPACES_KEPT) realWorkspaces.delete(realWorkspaces.keys().next().value as string);
  return root;
}

/** `true` when `candidate` is `root` or below it (both absolute and normalised). */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative));
}

/** `target` relative to `root` with `/` separators, `.` for the root itself. */
export function toRelative(root: string, target: string): string {
  const relative = path.relative(root, target);
  return relative === '' ? '.' : relative.split(path.sep).join('/');
}

class SymlinkLoopError extends Error {}

/**
 * Real path of `target`: `realpath` where the path exists; otherwise the real path of its
 * parent plus the missing name, following a dangling symlink to where it points.
 */
function resolveExisting(target: string, hops: number): string {
  if (hops > MAX_SYMLINK_HOPS) throw new SymlinkLoopError();
  try {
    return fs.realpathSync.native(target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new SymlinkLoopError();
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
  }
  if (isSymbolicLink(target)) {
    const link = fs.readlinkSync(target);
    return resolveExisting(path.resolve(path.dirname(target), link), hops + 1);
  }
  const parent = path.dirname(target);
  if (parent === target) return target;
  return path.join(resolveExisting(parent, hops), path.basename(target));
}

/** Whether `target` is a symbolic link (`false` when it cannot be looked at). */
export function isSymbolicLink(target: string): boolean {
  try {
    return fs.lstatSync(target).isSymbolicLink();
  } catch {
    return false;
  }
}
