import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { emptyWorkspaceTrash, removeSessionWorkspace, sessionWorkspacePath, WORKSPACE_TRASH } from './session-workspace';

describe('removeSessionWorkspace', () => {
  let scratch: string;
  let root: string;
  /** A folder beside the root that no removal may touch. */
  let outside: string;

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'session-workspace-'));
    root = path.join(scratch, 'workspaces');
    outside = path.join(scratch, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'precious.txt'), 'keep me');
  });

  afterEach(() => fs.rmSync(scratch, { recursive: true, force: true }));

  const session = { userId: 1, workspace: 'project' };
  const makeWorkspace = (owner = session): string => {
    const folder = sessionWorkspacePath(root, owner);
    fs.mkdirSync(path.join(folder, 'src'), { recursive: true });
    fs.writeFileSync(path.join(folder, 'src', 'a.txt'), 'a');
    return folder;
  };
  const outsideIsIntact = () => expect(fs.readFileSync(path.join(outside, 'precious.txt'), 'utf8')).toBe('keep me');
  const trashIsEmpty = () => expect(fs.readdirSync(path.join(root, WORKSPACE_TRASH))).toEqual([]);

  it('places a workspace at <root>/user-<id>/<name>', () => {
    expect(sessionWorkspacePath('/srv/ws', { userId: 7, workspace: 'p' })).toBe(path.join('/srv/ws', 'user-7', 'p'));
  });

  it('removes the folder and all it holds, and only it', async () => {
    const folder = makeWorkspace();
    const sibling = makeWorkspace({ userId: 1, workspace: 'other' });
    await expect(removeSessionWorkspace(root, session)).resolves.toEqual({ outcome: 'removed' });
    expect(fs.existsSync(folder)).toBe(false);
    expect(fs.existsSync(path.join(sibling, 'src', 'a.txt'))).toBe(true);
    trashIsEmpty();
  });

  it('answers absent when there is nothing to remove', async () => {
    await expect(removeSessionWorkspace(root, session)).resolves.toEqual({ outcome: 'absent' });
    fs.mkdirSync(path.join(root, 'user-1'), { recursive: true });
    await expect(removeSessionWorkspace(root, session)).resolves.toEqual({ outcome: 'absent' });
  });

  it('removes links inside the folder as links, never what they point to', async () => {
    const folder = makeWorkspace();
    fs.symlinkSync(outside, path.join(folder, 'escape'));
    fs.symlinkSync(path.join(outside, 'precious.txt'), path.join(folder, 'src', 'file-link'));
    await expect(removeSessionWorkspace(root, session)).resolves.toEqual({ outcome: 'removed' });
    expect(fs.existsSync(folder)).toBe(false);
    outsideIsIntact();
  });

  it('removes a workspace that is itself a link as a link, leaving its target', async () => {
    fs.mkdirSync(path.join(root, 'user-1'), { recursive: true });
    fs.symlinkSync(outside, sessionWorkspacePath(root, session));
    await expect(removeSessionWorkspace(root, session)).resolves.toEqual({ outcome: 'removed' });
    expect(fs.existsSync(sessionWorkspacePath(root, session))).toBe(false);
    outsideIsIntact();
  });

  it('refuses when the user folder is a link, even one that stays inside the root', async () => {
    const other = makeWorkspace({ userId: 2, workspace: 'project' });
    fs.symlinkSync(path.join(root, 'user-2'), path.join(root, 'user-1'));
    const removal = await removeSessionWorkspace(root, session);
    expect(removal).toEqual({ outcome: 'refused', reason: expect.stringContaining('leads elsewhere') });
    expect(fs.existsSync(path.join(other, 'src', 'a.txt'))).toBe(true);
  });

  it.each(['..', '.', '', '../user-2', 'a/b', 'a\\b'])('refuses the workspace name %j', async (name) => {
    makeWorkspace({ userId: 2, workspace: 'project' });
    const removal = await removeSessionWorkspace(root, { userId: 1, workspace: name });
    expect(removal.outcome).toBe('refused');
    expect(fs.existsSync(path.join(root, 'user-2', 'project', 'src', 'a.txt'))).toBe(true);
  });

  it('refuses when the trash folder is a link', async () => {
    const folder = makeWorkspace();
    fs.symlinkSync(outside, path.join(root, WORKSPACE_TRASH));
    await expect(removeSessionWorkspace(root, session)).resolves.toEqual({ outcome: 'refused', reason: expect.stringContaining('not a plain folder') });
    expect(fs.existsSync(path.join(folder, 'src', 'a.txt'))).toBe(true);
    expect(fs.readdirSync(outside)).toEqual(['precious.txt']);
  });

  it('works through a root that is itself reached by a link', async () => {
    const folder = makeWorkspace();
    const alias = path.join(scratch, 'alias');
    fs.symlinkSync(root, alias);
    await expect(removeSessionWorkspace(alias, session)).resolves.toEqual({ outcome: 'removed' });
    expect(fs.existsSync(folder)).toBe(false);
  });

  it('moves the folder away before it first yields, so a folder made again at once survives', async () => {
    const folder = makeWorkspace();
    const removal = removeSessionWorkspace(root, session);
    // What a session created with the same name right now would do.
    fs.mkdirSync(folder, { recursive: true });
    fs.writeFileSync(path.join(folder, 'new.txt'), 'fresh');
    await expect(removal).resolves.toEqual({ outcome: 'removed' });
    expect(fs.readdirSync(folder)).toEqual(['new.txt']);
    trashIsEmpty();
  });
});

describe('emptyWorkspaceTrash', () => {
  let scratch: string;
  let root: string;

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'workspace-trash-'));
    root = path.join(scratch, 'workspaces');
    fs.mkdirSync(root);
  });

  afterEach(() => fs.rmSync(scratch, { recursive: true, force: true }));

  it('deletes what an interrupted removal left in the trash, links as links, and nothing else', async () => {
    const outside = path.join(scratch, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'precious.txt'), 'keep me');
    const trash = path.join(root, WORKSPACE_TRASH);
    fs.mkdirSync(path.join(trash, 'user-1-half-deleted', 'src'), { recursive: true });
    fs.writeFileSync(path.join(trash, 'user-1-half-deleted', 'src', 'a.txt'), 'a');
    fs.symlinkSync(outside, path.join(trash, 'user-2-link'));
    fs.mkdirSync(path.join(root, 'user-1', 'live'), { recursive: true });

    await expect(emptyWorkspaceTrash(root)).resolves.toBe(2);
    expect(fs.readdirSync(trash)).toEqual([]);
    expect(fs.readFileSync(path.join(outside, 'precious.txt'), 'utf8')).toBe('keep me');
    expect(fs.existsSync(path.join(root, 'user-1', 'live'))).toBe(true);
  });

  it('does nothing without a trash, or when the trash is a link', async () => {
    await expect(emptyWorkspaceTrash(root)).resolves.toBe(0);
    const elsewhere = path.join(scratch, 'elsewhere');
    fs.mkdirSync(elsewhere);
    fs.writeFileSync(path.join(elsewhere, 'keep.txt'), 'keep');
    fs.symlinkSync(elsewhere, path.join(root, WORKSPACE_TRASH));
    await expect(emptyWorkspaceTrash(root)).resolves.toBe(0);
    expect(fs.readdirSync(elsewhere)).toEqual(['keep.txt']);
    await expect(emptyWorkspaceTrash(path.join(scratch, 'absent'))).resolves.toBe(0);
  });
});
