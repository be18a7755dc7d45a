import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HarnessDatabase, SCHEMA_VERSION } from './harness-database';
import { SchemaVersionError } from './persistence-errors';
import { SessionEventLog } from './session-event-log';

const TABLES = ['activities', 'attachments', 'messages', 'pending_waits', 'runs', 'session_event_batches', 'sessions', 'staged_tool_results', 'tasks'];

describe('HarnessDatabase', () => {
  let dir: string;
  const opened: HarnessDatabase[] = [];

  function open(filename: string, now?: () => Date): HarnessDatabase {
    const database = new HarnessDatabase(filename, { now });
    opened.push(database);
    return database;
  }

  function columnNames(database: HarnessDatabase, table: string): string[] {
    return database.connection
      .prepare<[], { name: string }>(`PRAGMA table_info(${table})`)
      .all()
      .map((column) => column.name);
  }

  function tableNames(database: HarnessDatabase): string[] {
    return database.connection
      .prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .pluck()
      .all();
  }

  function insertSession(database: HarnessDatabase): number {
    const { lastInsertRowid } = database.connection
      .prepare(
        `INSERT INTO sessions (user_id, execution_mode, permission_level, workspace, created_at)
         VALUES (1, 'CLOUD', 'FULL', 'ws', '2024-01-01T00:00:00.000Z')`,
      )
      .run();
    return Number(lastInsertRowid);
  }

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-db-'));
  });

  afterEach(() => {
    for (const database of opened.splice(0)) database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('when opening a file', () => {
    it('creates missing parent folders and the schema', () => {
      const file = path.join(dir, 'nested', 'deeper', 'harness.db');
      const database = open(file);
      expect(fs.existsSync(file)).toBe(true);
      expect(tableNames(database)).toEqual(TABLES);
      expect(database.schemaVersion).toBe(SCHEMA_VERSION);
    });

    it('uses WAL, foreign keys and a busy timeout', () => {
      const database = open(path.join(dir, 'h.db'));
      expect(database.connection.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(database.connection.pragma('foreign_keys', { simple: true })).toBe(1);
      expect(database.connection.pragma('busy_timeout', { simple: true })).toBe(5000);
    });

    it('reopens an existing file without touching its data or schema', () => {
      const file = path.join(dir, 'h.db');
      const first = open(file);
      const sessionId = insertSession(first);
      const schemaBefore = first.connection.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY name').all();
      first.close();

      const second = open(file);
      expect(second.connection.prepare('SELECT id FROM sessions').pluck().all()).toEqual([sessionId]);
      expect(second.connection.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY name').all()).toEqual(schemaBefore);
      expect(second.schemaVersion).toBe(SCHEMA_VERSION);
      second.close();
      expect(() => open(file).close()).not.toThrow();
    });

    it('upgrades a version 3 file: adds the attachments table and the attachments columns, keeping rows', () => {
      const file = path.join(dir, 'v3.db');
      const v3 = open(file);
      const sessionId = insertSession(v3);
      v3.connection.prepare("INSERT INTO messages (session_id, role, content, created_at) VALUES (?, 'tool', 'kept', 'now')").run(sessionId);
      // Turn the file back into what schema version 3 wrote.
      v3.connection.exec(
        'ALTER TABLE messages DROP COLUMN attachments; ALTER TABLE staged_tool_results DROP COLUMN attachments; DROP TABLE attachments; DROP TABLE session_event_batches',
      );
      v3.connection.pragma('user_version = 3');
      v3.close();

      const upgraded = open(file);
      expect(upgraded.schemaVersion).toBe(SCHEMA_VERSION);
      expect(tableNames(upgraded)).toEqual(TABLES);
      expect(columnNames(upgraded, 'messages')).toContain('attachments');
      expect(columnNames(upgraded, 'staged_tool_results')).toContain('attachments');
      expect(columnNames(upgraded, 'attachments')).toEqual([
        'id',
        'session_id',
        'execution_id',
        'tool_call_id',
        'media_type',
        'name',
        'bytes',
        'data',
        'created_at',
      ]);
      expect(upgraded.connection.prepare('SELECT content, attachments FROM messages').all()).toEqual([{ content: 'kept', attachments: null }]);
    });

    it('upgrades a version 4 file: adds the session event log, keeping rows', () => {
      const file = path.join(dir, 'v4.db');
      const v4 = open(file);
      const sessionId = insertSession(v4);
      // Turn the file back into what schema version 4 wrote.
      v4.connection.exec('DROP TABLE session_event_batches');
      v4.connection.pragma('user_version = 4');
      v4.close();

      const upgraded = open(file);
      expect(upgraded.schemaVersion).toBe(SCHEMA_VERSION);
      expect(tableNames(upgraded)).toEqual(TABLES);
      expect(columnNames(upgraded, 'session_event_batches')).toEqual(['session_id', 'first_seq', 'last_seq', 'events', 'created_at']);
      expect(upgraded.connection.prepare('SELECT id FROM sessions').pluck().all()).toEqual([sessionId]);
    });

    it('upgrades a version 6 file: its logged events become batches of one, read back as they were', () => {
      const file = path.join(dir, 'v6.db');
      const v6 = open(file);
      const sessionId = insertSession(v6);
      // Turn the file back into what schema version 6 wrote: one row an event.
      v6.connection.exec(`DROP TABLE session_event_batches;
        CREATE TABLE session_events (session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
          type TEXT NOT NULL, payload TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (session_id, seq));`);
      const payload = (seq: number) => JSON.stringify({ type: 'content_delta', sessionId, data: { delta: `d${seq}` }, timestamp: 1, seq });
      for (const seq of [1, 2, 4]) {
        v6.connection.prepare("INSERT INTO session_events (session_id, seq, type, payload, created_at) VALUES (?, ?, 'content_delta', ?, 'then')").run(sessionId, seq, payload(seq));
      }
      v6.connection.pragma('user_version = 6');
      v6.close();

      const upgraded = open(file);
      expect(upgraded.schemaVersion).toBe(SCHEMA_VERSION);
      expect(tableNames(upgraded)).toEqual(TABLES);
      const log = new SessionEventLog(upgraded);
      expect(log.read(sessionId, 0, 10)).toEqual([1, 2, 4].map((seq) => ({ seq, json: payload(seq) })));
      expect(log.lastSeq(sessionId)).toBe(4);
      expect(log.append({ type: 'content_delta', sessionId, data: {}, timestamp: 1 }).seq).toBe(5);
    });

    it('refuses a file written by a newer schema', () => {
      const file = path.join(dir, 'h.db');
      const database = open(file);
      database.connection.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
      database.close();
      let thrown: unknown;
      try {
        open(file);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(SchemaVersionError);
      expect(thrown).toMatchObject({ found: SCHEMA_VERSION + 1, supported: SCHEMA_VERSION });
    });
  });

  describe('when opened in memory', () => {
    it('creates the schema without a file', () => {
      const database = open(':memory:');
      expect(database.connection.memory).toBe(true);
      expect(tableNames(database)).toEqual(TABLES);
      expect(database.connection.pragma('foreign_keys', { simple: true })).toBe(1);
    });
  });

  describe('constraints', () => {
    it('deletes a session’s messages, activities, tasks, attachments and events with it', () => {
      const database = open(':memory:');
      const keep = insertSession(database);
      const drop = insertSession(database);
      const db = database.connection;
      for (const sessionId of [keep, drop]) {
        db.prepare("INSERT INTO messages (session_id, role, content, created_at) VALUES (?, 'user', 'hi', 'now')").run(sessionId);
        db.prepare(
          `INSERT INTO activities (session_id, tool_call_id, tool_name, type, target, summary, status, created_at)
           VALUES (?, 'c1', 'read_file', 'file_read', 'a', 's', 'SUCCESS', 'now')`,
        ).run(sessionId);
        db.prepare("INSERT INTO tasks (session_id, title, status, created_at, updated_at) VALUES (?, 't', 'pending', 'now', 'now')").run(sessionId);
        db.prepare(
          `INSERT INTO attachments (id, session_id, tool_call_id, media_type, bytes, data, created_at)
           VALUES (?, ?, 'c1', 'image/png', 1, x'00', 'now')`,
        ).run(`att_${sessionId}`, sessionId);
        db.prepare("INSERT INTO session_event_batches (session_id, first_seq, last_seq, events, created_at) VALUES (?, 1, 1, '{}', 'now')").run(sessionId);
      }
      db.prepare('DELETE FROM sessions WHERE id = ?').run(drop);
      for (const table of ['messages', 'activities', 'tasks', 'attachments', 'session_event_batches']) {
        expect(db.prepare(`SELECT session_id FROM ${table}`).pluck().all()).toEqual([keep]);
      }
    });

    it('rejects rows of a session that does not exist', () => {
      const database = open(':memory:');
      expect(() =>
        database.connection.prepare("INSERT INTO messages (session_id, role, created_at) VALUES (999, 'user', 'now')").run(),
      ).toThrow(/FOREIGN KEY/);
    });

    it('rejects an activity status other than SUCCESS or ERROR', () => {
      const database = open(':memory:');
      const sessionId = insertSession(database);
      const insert = database.connection.prepare(
        `INSERT INTO activities (session_id, tool_call_id, tool_name, type, target, summary, status, created_at)
         VALUES (?, 'c1', 'shell', 'command', 'ls', 's', ?, 'now')`,
      );
      expect(() => insert.run(sessionId, 'success')).toThrow(/CHECK constraint/);
      expect(() => insert.run(sessionId, 'ERROR')).not.toThrow();
      expect(database.connection.prepare("SELECT metadata FROM activities").pluck().all()).toEqual(['{}']);
    });
  });

  describe('releaseMemory', () => {
    it('empties the page cache without losing what is stored, or what a pending batch holds', () => {
      const file = path.join(dir, 'release.db');
      const database = open(file);
      const sessionId = insertSession(database);
      const insert = database.connection.prepare(
        "INSERT INTO tasks (session_id, title, status, created_at, updated_at) VALUES (?, ?, 'pending', '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z')",
      );
      database.transaction(() => {
        for (let i = 0; i < 2_000; i++) insert.run(sessionId, `task ${i} `.padEnd(200, 'x'));
      });
      const count = database.connection.prepare('SELECT COUNT(*) FROM tasks').pluck();
      expect(count.get()).toBe(2_000);
      database.batch(() => insert.run(sessionId, 'written into the batch'));

      database.releaseMemory();

      expect(database.batchPending).toBe(true);
      expect(count.get()).toBe(2_001);
      database.commit();
      database.close();
      const reopened = open(file);
      expect(reopened.connection.prepare('SELECT COUNT(*) FROM tasks').pluck().get()).toBe(2_001);
    });

    it('does nothing once the connection is closed', () => {
      const database = open(path.join(dir, 'closed.db'));
      database.close();
      expect(() => database.releaseMemory()).not.toThrow();
    });
  });

  describe('transaction', () => {
    it('commits everything the function wrote and returns its value', () => {
      const database = open(':memory:');
      const ids = database.transaction(() => [insertSession(database), insertSession(database)]);
      expect(database.connection.prepare('SELECT id FROM sessions ORDER BY id').pluck().all()).toEqual(ids);
    });

    it('writes nothing when the function throws, and rethrows', () => {
      const database = open(':memory:');
      expect(() =>
        database.transaction(() => {
          insertSession(database);
          throw new Error('boom');
        }),
      ).toThrow('boom');
      expect(database.connection.prepare('SELECT COUNT(*) FROM sessions').pluck().get()).toBe(0);
    });
  });

  describe('batch', () => {
    /** A database whose end-of-turn checks the test runs, with a clock it moves. */
    function batched(filename = ':memory:') {
      const checks: Array<() => void> = [];
      const later: Array<{ check: () => void; ms: number }> = [];
      let millis = 0;
      const warnings: string[] = [];
      const database = new HarnessDatabase(filename, {
        scheduleCheck: (check) => checks.push(check),
        scheduleCheckAfter: (check, ms) => later.push({ check, ms }),
        clock: () => millis,
        maxCommitDelayMs: 4,
        minCommitIntervalMs: 1,
        logger: { warn: (message) => warnings.push(message) },
      });
      opened.push(database);
      return {
        database,
        warnings,
        advance: (ms: number) => (millis += ms),
        /** Runs the checks scheduled so far (one turn's end); returns how many ran. */
        endTurn: () => checks.splice(0).map((check) => check()).length,
        /** The checks scheduled for later, with their delays. */
        later,
      };
    }

    it('writes at once, visibly on the connection, and commits at the end of a turn that wrote nothing new', () => {
      const file = path.join(dir, 'batch.db');
      const { database, endTurn } = batched(file);
      const id = database.batch(() => insertSession(database));
      expect(database.connection.prepare('SELECT id FROM sessions').pluck().all()).toEqual([id]);
      expect(database.connection.inTransaction).toBe(true);
      const reader = new HarnessDatabase(file);
      opened.push(reader);
      const committedRows = () => reader.connection.prepare('SELECT COUNT(*) FROM sessions').pluck().get();
      // The turn that wrote: not yet; the next one, quiet: committed.
      expect(endTurn()).toBe(1);
      expect(committedRows()).toBe(0);
      expect(endTurn()).toBe(1);
      expect(committedRows()).toBe(1);
      expect(database.connection.inTransaction).toBe(false);
      expect(endTurn()).toBe(0);
    });

    it('keeps deferring while every turn writes, but commits once the batch is maxCommitDelayMs old', () => {
      const { database, endTurn, advance } = batched();
      const committed: string[] = [];
      database.batch(() => insertSession(database));
      database.afterCommit(() => committed.push('first'));
      for (let turn = 0; turn < 3; turn++) {
        advance(1);
        endTurn();
        database.batch(() => insertSession(database));
      }
      expect(committed).toEqual([]);
      advance(1);
      endTurn();
      expect(committed).toEqual(['first']);
      expect(database.connection.inTransaction).toBe(false);
    });

    it('waits minCommitIntervalMs after the last commit before it commits a batch whose writing paused', () => {
      const { database, endTurn, advance, later } = batched();
      database.batch(() => insertSession(database));
      endTurn();
      endTurn();
      expect(database.connection.inTransaction).toBe(false);
      advance(0.25);
      database.batch(() => insertSession(database));
      endTurn();
      endTurn();
      // Quiet, but the last commit was 0.25 ms ago: a check later, nothing now.
      expect(database.connection.inTransaction).toBe(true);
      expect(later).toEqual([{ check: expect.any(Function), ms: 0.75 }]);
      advance(0.75);
      later.splice(0)[0].check();
      expect(database.connection.inTransaction).toBe(false);
    });

    it('runs afterCommit callbacks at the end of the turn when nothing is pending', () => {
      const { database, endTurn } = batched();
      const calls: string[] = [];
      database.afterCommit(() => calls.push('a'));
      database.afterCommit(() => calls.push('b'));
      endTurn();
      expect(calls).toEqual(['a', 'b']);
    });

    it('undoes only the writes of a batch function that throws', () => {
      const { database, endTurn } = batched();
      const kept = database.batch(() => insertSession(database));
      expect(() =>
        database.batch(() => {
          insertSession(database);
          throw new Error('boom');
        }),
      ).toThrow('boom');
      endTurn();
      endTurn();
      expect(database.connection.prepare('SELECT id FROM sessions').pluck().all()).toEqual([kept]);
    });

    it('commits the batch before a transaction, which is durable when it returns', () => {
      const file = path.join(dir, 'order.db');
      const { database } = batched(file);
      database.batch(() => insertSession(database));
      database.transaction(() => insertSession(database));
      expect(database.connection.inTransaction).toBe(false);
      const reader = new HarnessDatabase(file);
      opened.push(reader);
      expect(reader.connection.prepare('SELECT COUNT(*) FROM sessions').pluck().get()).toBe(2);
    });

    it('makes a transaction inside a batch, and a batch inside a transaction, a savepoint of the outer one', () => {
      const { database, endTurn } = batched();
      database.batch(() => {
        insertSession(database);
        expect(() =>
          database.transaction(() => {
            insertSession(database);
            throw new Error('inner');
          }),
        ).toThrow('inner');
      });
      expect(database.connection.inTransaction).toBe(true);
      database.transaction(() => database.batch(() => insertSession(database)));
      expect(database.connection.inTransaction).toBe(false);
      endTurn();
      expect(database.connection.prepare('SELECT COUNT(*) FROM sessions').pluck().get()).toBe(2);
    });

    it('runs the writers queued for the commit inside the batch, just before it', () => {
      const { database, endTurn } = batched();
      database.writeBeforeCommit(() => database.batch(() => insertSession(database)));
      expect(database.batchPending).toBe(true);
      const count = () => database.connection.prepare('SELECT COUNT(*) FROM sessions').pluck().get();
      // The turn that queued it: not due yet, nothing written.
      endTurn();
      expect(count()).toBe(0);
      endTurn();
      expect(count()).toBe(1);
      expect(database.connection.inTransaction).toBe(false);
      expect(database.batchPending).toBe(false);
    });

    it('refuses a function that returns a promise, writing nothing of it', () => {
      const { database } = batched();
      expect(() =>
        database.batch(() => {
          insertSession(database);
          return Promise.resolve();
        }),
      ).toThrow(/synchronous/);
      expect(database.connection.prepare('SELECT COUNT(*) FROM sessions').pluck().get()).toBe(0);
    });

    it('commits what is pending when it closes', () => {
      const file = path.join(dir, 'close.db');
      const { database } = batched(file);
      database.batch(() => insertSession(database));
      const calls: string[] = [];
      database.afterCommit(() => calls.push('committed'));
      database.close();
      expect(calls).toEqual(['committed']);
      const reopened = open(file);
      expect(reopened.connection.prepare('SELECT COUNT(*) FROM sessions').pluck().get()).toBe(1);
    });
  });

  it('stamps times from the injected clock', () => {
    const database = open(':memory:', () => new Date(Date.UTC(2024, 4, 6, 7, 8, 9, 10)));
    expect(database.timestamp()).toBe('2024-05-06T07:08:09.010Z');
  });

  it('closes once and ignores a second close', () => {
    const database = open(':memory:');
    database.close();
    expect(database.open).toBe(false);
    expect(() => database.close()).not.toThrow();
  });

  it('lets writers write before it closes, once, even when one of them fails', () => {
    const database = open(':memory:');
    const calls: string[] = [];
    database.beforeClose(() => {
      throw new Error('disk full');
    });
    database.beforeClose(() => calls.push(`open: ${database.open}`));
    database.close();
    database.close();
    expect(calls).toEqual(['open: true']);
    expect(database.open).toBe(false);
  });
});
