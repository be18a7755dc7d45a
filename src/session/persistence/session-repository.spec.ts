import { ActivityRepository } from './activity-repository';
import { HarnessDatabase } from './harness-database';
import { MessageRepository } from './message-repository';
import { InvalidRecordError } from './persistence-errors';
import { RunRepository } from './run-repository';
import { SessionRepository, type CreateSessionInput } from './session-repository';
import { SqliteAttachmentStore } from './sqlite-attachment-store';
import { SqliteTaskStore } from './sqlite-task-store';

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

  describe('listOwned', () => {
    it('pages through the user\'s own sessions, newest first, until next is null', () => {
      const mine = [1, 2, 3, 4, 5].map(() => sessions.create(sessionInput({ userId: 1 })));
      sessions.create(sessionInput({ userId: 2 }));
      const ids = (page: { sessions: Array<{ id: number }> }) => page.sessions.map((session) => session.id);
      const newestFirst = mine.map((session) => session.id).reverse();

      const first = sessions.listOwned(1, { limit: 2 });
      expect(ids(first)).toEqual(newestFirst.slice(0, 2));
      expect(first.next).toBe(newestFirst[1]);
      const second = sessions.listOwned(1, { limit: 2, before: first.next as number });
      expect(ids(second)).toEqual(newestFirst.slice(2, 4));
      const last = sessions.listOwned(1, { limit: 2, before: second.next as number });
      expect(ids(last)).toEqual(newestFirst.slice(4));
      expect(last.next).toBeNull();
      expect(last.sessions[0]).toEqual(mine[0]);
    });

    it('answers next null when the page holds exactly the rest', () => {
      [1, 2].forEach(() => sessions.create(sessionInput()));
      expect(sessions.listOwned(1, { limit: 2 }).next).toBeNull();
    });

    it('answers an empty page for a user without sessions, or a cursor below every id', () => {
      const only = sessions.create(sessionInput({ userId: 1 }));
      expect(sessions.listOwned(2, { limit: 20 })).toEqual({ sessions: [], next: null });
      expect(sessions.listOwned(1, { limit: 20, before: only.id })).toEqual({ sessions: [], next: null });
    });
  });

  describe('delete', () => {
    /** Every table of the schema that has a `session_id` column. */
    const sessionTables = (): string[] =>
      database.connection
        .prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .pluck()
        .all()
        .filter((table) => (database.connection.pragma(`table_info(${table})`) as Array<{ name: string }>).some((column) => column.name === 'session_id'));

    it('removes the session and everything stored for it, leaving other sessions alone', () => {
      const attachments = new SqliteAttachmentStore(database);
      const messages = new MessageRepository(database, attachments);
      const fill = (sessionId: number, executionId: string): void => {
        new RunRepository(database).start(executionId, sessionId);
        const attachment = attachments.save({ sessionId, executionId, toolCallId: 'call_1', mediaType: 'image/png', data: Uint8Array.of(1, 2, 3) });
        messages.append(sessionId, executionId, { role: 'user', content: 'hello' });
        messages.stageToolResult(executionId, { role: 'tool', tool_call_id: 'call_1', content: 'staged', attachments: [attachment] });
        new ActivityRepository(database).record({
          sessionId,
          executionId,
          toolCallId: 'call_1',
          toolName: 'read_file',
          type: 'read',
          target: 'a.txt',
          summary: 'Read a.txt',
          status: 'SUCCESS',
          metadata: {},
        });
        new SqliteTaskStore(database).create(sessionId, { title: 'a task' });
      };
      const doomed = sessions.create(sessionInput());
      const kept = sessions.create(sessionInput());
      fill(doomed.id, 'exec-doomed');
      fill(kept.id, 'exec-kept');
      // Staged results are written with the group commit.
      database.commit();
      const count = (table: string, sessionId: number) =>
        database.connection.prepare(`SELECT COUNT(*) FROM ${table} WHERE session_id = ?`).pluck().get(sessionId);
      const staged = (executionId: string) => database.connection.prepare('SELECT COUNT(*) FROM staged_tool_results WHERE execution_id = ?').pluck().get(executionId);
      const filled = ['messages', 'activities', 'tasks', 'runs', 'attachments'];
      const tables = sessionTables();
      expect(tables).toEqual(expect.arrayContaining(filled));
      for (const table of filled) expect([table, count(table, doomed.id)]).toEqual([table, 1]);
      expect(staged('exec-doomed')).toBe(1);

      expect(sessions.delete(doomed.id)).toBe(true);

      expect(sessions.findById(doomed.id)).toBeUndefined();
      for (const table of tables) expect([table, count(table, doomed.id)]).toEqual([table, 0]);
      expect(staged('exec-doomed')).toBe(0);
      expect(sessions.findById(kept.id)).toEqual(kept);
      for (const table of filled) expect([table, count(table, kept.id)]).toEqual([table, 1]);
      expect(staged('exec-kept')).toBe(1);
    });

    it('relies on a schema in which every table that holds a session id cascades from sessions, and every reference cascades', () => {
      // A table added later without ON DELETE CASCADE would make deleting a session fail (foreign
      // keys are on) or, worse, leave its rows behind.
      for (const table of sessionTables()) {
        const keys = database.connection.pragma(`foreign_key_list(${table})`) as Array<{ table: string; from: string; on_delete: string }>;
        expect([table, keys.find((key) => key.from === 'session_id')]).toEqual([table, expect.objectContaining({ table: 'sessions', on_delete: 'CASCADE' })]);
      }
      const tables = database.connection.prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all();
      for (const table of tables) {
        for (const key of database.connection.pragma(`foreign_key_list(${table})`) as Array<{ table: string; on_delete: string }>) {
          expect([table, key.table, key.on_delete]).toEqual([table, key.table, 'CASCADE']);
        }
      }
    });

    it('answers false for a missing session', () => {
      expect(sessions.delete(404)).toBe(false);
    });
  });

  describe('isWorkspaceInUse', () => {
    it('says whether a session of the same user has the workspace folder', () => {
      const session = sessions.create(sessionInput({ userId: 1, workspace: 'shared' }));
      expect(sessions.isWorkspaceInUse(1, 'shared')).toBe(true);
      expect(sessions.isWorkspaceInUse(2, 'shared')).toBe(false);
      expect(sessions.isWorkspaceInUse(1, 'other')).toBe(false);
      sessions.delete(session.id);
      expect(sessions.isWorkspaceInUse(1, 'shared')).toBe(false);
    });
  });
});
