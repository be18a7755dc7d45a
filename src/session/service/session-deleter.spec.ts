import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HarnessDatabase } from '../persistence/harness-database';
import { MessageRepository } from '../persistence/message-repository';
import { ActivityRepository } from '../persistence/activity-repository';
import { SessionRepository, type SessionRecord } from '../persistence/session-repository';
import { SqliteAttachmentStore } from '../persistence/sqlite-attachment-store';
import { SessionDeleter, type SessionDeleterDeps } from './session-deleter';
import { SessionBusyError, SessionNotFoundError } from './session-errors';
import { SessionService, type CreateSessionRequest } from './session-service';

describe('SessionDeleter', () => {
  let scratch: string;
  let database: HarnessDatabase;
  let repository: SessionRepository;
  let messages: MessageRepository;
  let sessions: SessionService;
  let activeRuns: Set<number>;
  let backgroundRunning: Map<number, number>;
  let forgotten: number[];
  let closed: number[];
  let warnings: string[];
  let deleter: SessionDeleter;

  const build = (overrides: Partial<SessionDeleterDeps> = {}): SessionDeleter =>
    new SessionDeleter({
      sessions,
      repository,
      runs: { isActive: (id) => activeRuns.has(id) },
      backgroundTasks: { runningCount: (id) => backgroundRunning.get(id) ?? 0, forgetSession: (id) => void forgotten.push(id) },
      sessionTools: { close: async (id) => void closed.push(id) },
      workspaceRoot: path.join(scratch, 'workspaces'),
      logger: { warn: (message) => void warnings.push(message) },
      ...overrides,
    });

  const create = (userId = 1, overrides: Partial<CreateSessionRequest> = {}): SessionRecord =>
    sessions.create(userId, { executionMode: 'CLOUD', permissionLevel: 'FULL', ...overrides });

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'session-deleter-'));
    database = new HarnessDatabase(':memory:');
    repository = new SessionRepository(database);
    messages = new MessageRepository(database, new SqliteAttachmentStore(database));
    sessions = new SessionService({
      sessions: repository,
      messages,
      activities: new ActivityRepository(database),
      workspaceRoot: path.join(scratch, 'workspaces'),
      builtinToolNames: () => [],
      mcpServers: [],
    });
    activeRuns = new Set();
    backgroundRunning = new Map();
    forgotten = [];
    closed = [];
    warnings = [];
    deleter = build();
  });

  afterEach(() => {
    database.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  describe('when the owner deletes an idle session', () => {
    it('deletes its row and history, closes its MCP clients, forgets its background results and removes its folder', async () => {
      const session = create();
      const other = create();
      messages.append(session.id, null, { role: 'user', content: 'hello' });
      fs.writeFileSync(path.join(sessions.workspacePath(session), 'notes.txt'), 'x');

      await expect(deleter.delete(session.id, 1)).resolves.toEqual({ outcome: 'removed' });

      expect(repository.findById(session.id)).toBeUndefined();
      expect(messages.listBySession(session.id)).toEqual([]);
      expect(closed).toEqual([session.id]);
      expect(forgotten).toEqual([session.id]);
      expect(fs.existsSync(sessions.workspacePath(session))).toBe(false);
      expect(fs.existsSync(sessions.workspacePath(other))).toBe(true);
      expect(warnings).toEqual([]);
    });

    it('keeps a workspace folder that another session of the user still uses, and removes it with the last one', async () => {
      const first = create(1, { workspace: 'shared' });
      const second = create(1, { workspace: 'shared' });
      const folder = sessions.workspacePath(first);
      fs.writeFileSync(path.join(folder, 'notes.txt'), 'x');

      await expect(deleter.delete(first.id, 1)).resolves.toEqual({ outcome: 'shared' });
      expect(fs.readFileSync(path.join(folder, 'notes.txt'), 'utf8')).toBe('x');

      await expect(deleter.delete(second.id, 1)).resolves.toEqual({ outcome: 'removed' });
      expect(fs.existsSync(folder)).toBe(false);
    });

    it('removes a folder whose name another user also uses only for its owner', async () => {
      const mine = create(1, { workspace: 'project' });
      const theirs = create(2, { workspace: 'project' });
      await deleter.delete(mine.id, 1);
      expect(fs.existsSync(sessions.workspacePath(mine))).toBe(false);
      expect(fs.existsSync(sessions.workspacePath(theirs))).toBe(true);
    });

    it('still deletes the session when its folder cannot be removed or its MCP clients fail to close, and says so', async () => {
      const session = create();
      fs.rmSync(path.join(scratch, 'workspaces', 'user-1'), { recursive: true });
      fs.mkdirSync(path.join(scratch, 'elsewhere', session.workspace), { recursive: true });
      fs.symlinkSync(path.join(scratch, 'elsewhere'), path.join(scratch, 'workspaces', 'user-1'));
      const failing = build({ sessionTools: { close: () => Promise.reject(new Error('server gone')) } });

      await expect(failing.delete(session.id, 1)).resolves.toEqual({ outcome: 'refused', reason: expect.any(String) });

      expect(repository.findById(session.id)).toBeUndefined();
      expect(fs.existsSync(path.join(scratch, 'elsewhere', session.workspace))).toBe(true);
      expect(warnings).toEqual([expect.stringContaining('server gone'), expect.stringContaining('was not removed')]);
    });
  });

  describe('when the session cannot be deleted', () => {
    const expectUntouched = (session: SessionRecord) => {
      expect(repository.findById(session.id)).toEqual(session);
      expect(fs.existsSync(sessions.workspacePath(session))).toBe(true);
      expect(closed).toEqual([]);
      expect(forgotten).toEqual([]);
    };

    it('answers not found to another user, as for a missing session', async () => {
      const session = create(1);
      await expect(deleter.delete(session.id, 2)).rejects.toBeInstanceOf(SessionNotFoundError);
      await expect(deleter.delete(9999, 1)).rejects.toBeInstanceOf(SessionNotFoundError);
      expectUntouched(session);
    });

    it('refuses while a run is active', async () => {
      const session = create();
      activeRuns.add(session.id);
      await expect(deleter.delete(session.id, 1)).rejects.toThrow(new SessionBusyError(session.id, 'a run is active'));
      expectUntouched(session);
    });

    it('refuses while a background command of the session still runs', async () => {
      const session = create();
      backgroundRunning.set(session.id, 2);
      await expect(deleter.delete(session.id, 1)).rejects.toThrow(SessionBusyError);
      await expect(deleter.delete(session.id, 1)).rejects.toThrow(/2 background command/);
      expectUntouched(session);
    });
  });
});
