import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** What of a session locates its server-side workspace folder. */
export interface WorkspaceOwner {
  userId: number;
  /** The workspace folder's name. */
  workspace: string;
}

/**
 * A session's folder on the server: `<root>/user-<userId>/<workspace>`. Workspaces are kept per
 * user, so two users can never share one by choosing the same name; two sessions of one user can.
 */
export function sessionWorkspacePath(root: string, session: WorkspaceOwner): string {
  return path.join(root, userFolderName(session.userId), session.workspace);
}

/** Where removed workspaces wait for their deletion to finish; never a user's folder (`user-<id>`). */
export const WORKSPACE_TRASH = '.trash';

/** How a workspace removal went; `refused` says why nothing was touched. */
export type WorkspaceRemoval = { outcome: 'removed' } | { outcome: 'absent' } | { outcome: 'refused'; reason: string };

/**
 * Removes a session's workspace folder, never anything outside the workspace root:
 *
 * - the user's folder must be a real folder directly below the root's real path (no link on the
 *   way), and the workspace name a single plain path segment;
 * - the workspace entry is moved, not followed: a link is removed as a link, its target is
 *   left alone; links inside the folder are removed as links too (`fs.rm` does not follow them);
 * - the entry is first renamed into `<root>/.trash/` and only then deleted. The checks and the
 *   rename happen synchronously, before this function first yields: a session created with the
 *   same workspace name right after the caller deleted the session's row gets a fresh folder,
 *   never one being deleted under it.
 */
export async function removeSessionWorkspace(root: string, session: WorkspaceOwner): Promise<WorkspaceRemoval> {
  const name = session.workspace;
  if (name === '' || name === '.' || name === '..' || name !== path.basename(name) || /[\\/\0]/.test(name)) {
    return { outcome: 'refused', reason: `the workspace name ${JSON.stringify(name)} is not a plain folder name` };
  }
  const realRoot = realPathOrNull(root);
  if (realRoot === null) return { outcome: 'absent' };
  const userFolder = path.join(realRoot, userFolderName(session.userId));
  const realUserFolder = realPathOrNull(userFolder);
  if (realUserFolder === null) return { outcome: 'absent' };
  if (realUserFolder !== userFolder) return { outcome: 'refused', reason: `${userFolder} leads elsewhere (${realUserFolder})` };
  const entry = path.join(userFolder, name);
  if (lstatOrNull(entry) === null) return { outcome: 'absent' };

  const trash = path.join(realRoot, WORKSPACE_TRASH);
  fs.mkdirSync(trash, { recursive: true });
  const trashStat = fs.lstatSync(trash);
  if (!trashStat.isDirectory() || trashStat.isSymbolicLink()) return { outcome: 'refused', reason: `${trash} is not a plain folder` };
  const doomed = path.join(trash, `${userFolderName(session.userId)}-${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`);
  fs.renameSync(entry, doomed);
  await fs.promises.rm(doomed, { recursive: true, force: true });
  return { outcome: 'removed' };
}

/**
 * Deletes what earlier removals left in `<root>/.trash/` — a server that stopped while it
 * deleted a workspace leaves the rest of it there. Nothing outside: the trash must be a plain
 * folder directly in the root's real path, and links in it are removed as links. Resolves with
 * how many entries were deleted.
 */
export async function emptyWorkspaceTrash(root: string): Promise<number> {
  const realRoot = realPathOrNull(root);
  if (realRoot === null) return 0;
  const trash = path.join(realRoot, WORKSPACE_TRASH);
  const stats = lstatOrNull(trash);
  if (stats === null || !stats.isDirectory()) return 0;
  const entries = fs.readdirSync(trash);
  for (const entry of entries) await fs.promises.rm(path.join(trash, entry), { recursive: true, force: true });
  return entries.length;
}

function userFolderName(userId: number): string {
  return `user-${userId}`;
}

function realPathOrNull(target: string): string | null {
  try {
    return fs.realpathSync(target);
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

function lstatOrNull(target: string): fs.Stats | null {
  try {
    return fs.lstatSync(target);
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}
