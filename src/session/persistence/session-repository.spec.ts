import { HarnessDatabase } from './harness-database';
import { InvalidRecordError } from './persistence-errors';
import { SessionRepository, type CreateSessionInput } from './session-repository';

const NOW = new Date(Date.UTC(2024, 0, 2, 3, 4, 5));

function sessionInput(overrides: Partial<CreateSessionInput> = {}): CreateSessionInput {
  return { userId: 1, executionMode: 'CLOUD', permissionLevel: 'READ_WRITE', workspace: 'project', ...overrides };
}

describe('SessionRepository', () => {
  let database: HarnessDatabase;
  let sessions: SessionRepository;

  beforeEach(() => {
    database = new HarnessDatabase(':memory:', { now: () => NOW });
    sessions = new SessionRepository(database);
  });

  afterEach(() => database.close());

  describe('create', () => {
    it('stores a session and answers it in the HTTP shape', () => {
      const created = sessions.create(
        sessionInput({ userId: 7, executionMode: 'LOCAL', permissionLevel: 'SMART', tools: ['read_file', 'shell'], mcpServers: [2, 5] }),
      );
      expect(created).toEqual({
        id: expect.any(Number),
        userId: 7,
        executionMode: 'LOCAL',
        permissionLevel: 'SMART',
        tools: ['read_file', 'shell'],
        mcpServers: [2, 5],
        workspace: 'project',
        createdAt: '2024-01-02T03:04:05.000Z',
      });
      expect(sessions.findById(created.id)).toEqual(created);
    });

    it('keeps "every tool" (null) apart from "no tool" ([])', () => {
      const all = sessions.create(sessionInput());
      const none = sessions.create(sessionInput({ tools: [] }));
      expect(sessions.findById(all.id)).toMatchObject({ tools: null, mcpServers: [] });
      expect(sessions.findById(none.id)).toMatchObject({ tools: [] });
    });

    it('gives each session its own id', () => {
      const ids = [sessions.create(sessionInput()).id, sessions.create(sessionInput()).id];
      expect(new Set(ids).size).toBe(2);
    });

    it('refuses an unknown mode or level and writes nothing', () => {
      expect(() => sessions.create(sessionInput({ executionMode: 'HYBRID' as never }))).toThrow(InvalidRecordError);
      expect(() => sessions.create(sessionInput({ permissionLevel: 'root' as never }))).toThrow(/permissionLevel/);
      expect(database.connection.prepare('SELECT COUNT(*) FROM sessions').pluck().get()).toBe(0);
    });
  });

  describe('findById / findOwned', () => {
    it('answers undefined for a missing session', () => {
      expect(sessions.findById(404)).toBeUndefined();
      expect(sessions.findOwned(404, 1)).toBeUndefined();
    });

    it('finds a session only for the user who owns it', () => {
      const mine = sessions.create(sessionInput({ userId: 1 }));
      const theirs = sessions.create(sessionInput({ userId: 2 }));
      expect(sessions.findOwned(mine.id, 1)).toEqual(mine);
      expect(sessions.findOwned(mine.id, 2)).toBeUndefined();
      expect(sessions.findOwned(theirs.id, 1)).toBeUndefined();
      expect(sessions.findOwned(theirs.id, 2)).toEqual(theirs);
    });

    it('reads a damaged tool list as no tools, never as every tool', () => {
      const session = sessions.create(sessionInput({ tools: ['read_file'] }));
      database.connection.prepare("UPDATE sessions SET tools = '{oops', mcp_servers = 'x' WHERE id = ?").run(session.id);
      expect(sessions.findById(session.id)).toMatchObject({ tools: [], mcpServers: [] });
    });
  });

  describe('permission level', () => {
    it('updates the level that the next read sees', () => {
      const session = sessions.create(sessionInput({ permissionLevel: 'READ_ONLY' }));
      expect(sessions.getPermissionLevel(session.id)).toBe('READ_ONLY');
      const updated = sessions.updatePermissionLevel(session.id, 'FULL');
      expect(updated).toEqual({ ...session, permissionLevel: 'FULL' });
      expect(sessions.getPermissionLevel(session.id)).toBe('FULL');
      expect(sessions.findById(session.id)?.permissionLevel).toBe('FULL');
    });

    it('changes only the session it names', () => {
      const first = sessions.create(sessionInput({ permissionLevel: 'READ_ONLY' }));
      const second = sessions.create(sessionInput({ permissionLevel: 'READ_ONLY' }));
      sessions.updatePermissionLevel(first.id, 'SMART');
      expect(sessions.getPermissionLevel(second.id)).toBe('READ_ONLY');
    });

    it('answers undefined / null for a missing session', () => {
      expect(sessions.updatePermissionLevel(404, 'FULL')).toBeUndefined();
      expect(sessions.getPermissionLevel(404)).toBeNull();
    });

    it('refuses an unknown level and keeps the old one', () => {
      const session = sessions.create(sessionInput({ permissionLevel: 'SMART' }));
      expect(() => sessions.updatePermissionLevel(session.id, 'ALL' as never)).toThrow(InvalidRecordError);
      expect(sessions.getPermissionLevel(session.id)).toBe('SMART');
    });

    it('reads a damaged stored level as the most careful one', () => {
      const session = sessions.create(sessionInput({ permissionLevel: 'FULL' }));
      database.connection.prepare("UPDATE sessions SET permission_level = 'GOD' WHERE id = ?").run(session.id);
      expect(sessions.getPermissionLevel(session.id)).toBe('READ_ONLY');
    });
  });
});
