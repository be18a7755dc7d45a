import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HarnessDatabase } from './harness-database';
import { eventJson, SessionEventLog, type SessionEventInput, type SessionEventLogOptions } from './session-event-log';
import { SessionRepository } from './session-repository';

const NOW = new Date(Date.UTC(2024, 0, 2, 3, 4, 5));

function eventOf(sessionId: number, overrides: Partial<SessionEventInput> = {}): SessionEventInput {
  return { type: 'content_delta', sessionId, data: { delta: 'x', executionId: 'e1' }, timestamp: 1_700_000_000_000, ...overrides };
}

describe('SessionEventLog', () => {
  let dir: string;
  let database: HarnessDatabase;
  let sessionId: number;
  let warnings: string[];
  /** Writes scheduled by the log, run by the test (or by a read). */
  let scheduled: Array<() => void>;

  function open(file = ':memory:'): HarnessDatabase {
    database = new HarnessDatabase(file, { now: () => NOW });
    return database;
  }

  function newSession(db = database): number {
    return new SessionRepository(db).create({ userId: 1, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'w' }).id;
  }

  function logOn(db: HarnessDatabase, options: SessionEventLogOptions = {}): SessionEventLog {
    return new SessionEventLog(db, { logger: { warn: (message) => warnings.push(message) }, schedule: (write) => scheduled.push(write), ...options });
  }

  /** The stored events of a session, as rows hold them: each row's events one JSON a line. */
  function storedEvents(id: number): Array<{ seq: number; json: string; createdAt: string }> {
    const rows = database.connection
      .prepare<[number], { first_seq: number; last_seq: number; events: string; created_at: string }>('SELECT * FROM session_event_batches WHERE session_id = ? ORDER BY first_seq')
      .all(id);
    return rows.flatMap((row) => {
      const lines = row.events.split('\n');
      expect(lines).toHaveLength(row.last_seq - row.first_seq + 1);
      return lines.map((json, index) => ({ seq: row.first_seq + index, json, createdAt: row.created_at }));
    });
  }

  function storedSeqs(id: number): number[] {
    return storedEvents(id).map((event) => event.seq);
  }

  function storedRows(id: number): number {
    return database.connection.prepare<[number], number>('SELECT COUNT(*) FROM session_event_batches WHERE session_id = ?').pluck().get(id) ?? 0;
  }

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-event-log-'));
    warnings = [];
    scheduled = [];
    open();
    sessionId = newSession();
  });

  afterEach(() => {
    database.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('append', () => {
    it('numbers each session from 1, without gaps, independently of the others', () => {
      const log = logOn(database);
      const other = newSession();
      const seqs = [log.append(eventOf(sessionId)), log.append(eventOf(other)), log.append(eventOf(sessionId)), log.append(eventOf(sessionId))].map(
        (event) => event.seq,
      );
      expect(seqs).toEqual([1, 1, 2, 3]);
      expect(log.lastSeq(sessionId)).toBe(3);
      expect(log.lastSeq(other)).toBe(1);
    });

    it('answers the WebSocket JSON of the event with its seq last', () => {
      const log = logOn(database);
      const { json } = log.append(eventOf(sessionId, { type: 'message_end', data: { total_tokens: 3, executionId: 'e1' } }));
      expect(json).toBe(`{"type":"message_end","sessionId":${sessionId},"data":{"total_tokens":3,"executionId":"e1"},"timestamp":1700000000000,"seq":1}`);
    });

    it('gives exactly the text JSON.stringify gives for the event and its seq, whatever its data', () => {
      const datas: Array<Record<string, unknown>> = [
        {},
        { delta: 'a "quoted" \\ back\nslash, é 🔧 \u2028', executionId: 'e1' },
        { nested: { list: [1, 'two', null, { three: true }], empty: [] }, at: new Date(0), gone: undefined, big: 1e21, small: -0 },
        // What the listener's spread makes: fields in insertion order, executionId last.
        { ...{ tool_call_id: 'call_1', arguments: '{"a":1}' }, executionId: 'e1' },
      ];
      datas.forEach((data, index) => {
        const event = eventOf(sessionId, { type: 'tool_call_args_delta', data });
        expect(eventJson(event, index + 1)).toBe(JSON.stringify({ ...event, seq: index + 1 }));
      });
      // Not what an event carries, but still the same text: a timestamp that is not a number JSON can write.
      const odd = { ...eventOf(sessionId), timestamp: Number.NaN };
      expect(eventJson(odd, 9)).toBe(JSON.stringify({ ...odd, seq: 9 }));
    });

    it('writes the events of one tick in one scheduled write, in order, one row a session', () => {
      const log = logOn(database);
      const other = newSession();
      for (let i = 0; i < 3; i++) {
        log.append(eventOf(sessionId, { data: { delta: String(i) } }));
        log.append(eventOf(other, { data: { delta: `other ${i}` } }));
      }
      expect(scheduled).toHaveLength(1);
      expect(storedSeqs(sessionId)).toEqual([]);
      scheduled[0]();
      expect(storedSeqs(sessionId)).toEqual([1, 2, 3]);
      expect(storedSeqs(other)).toEqual([1, 2, 3]);
      expect([storedRows(sessionId), storedRows(other)]).toEqual([1, 1]);
      expect(storedEvents(sessionId)[2]).toEqual({
        seq: 3,
        json: JSON.stringify({ type: 'content_delta', sessionId, data: { delta: '2' }, timestamp: 1_700_000_000_000, seq: 3 }),
        createdAt: NOW.toISOString(),
      });
    });

    it('keeps a newline inside an event as JSON escapes it, so each stored line is one event', () => {
      const log = logOn(database);
      const appended = [log.append(eventOf(sessionId, { data: { delta: 'two\nlines\r\n' } })), log.append(eventOf(sessionId, { data: { delta: '\u2028' } }))];
      log.flush();
      expect(storedRows(sessionId)).toBe(1);
      expect(log.read(sessionId, 0, 10)).toEqual(appended);
      expect((JSON.parse(log.read(sessionId, 0, 1)[0].json) as { data: { delta: string } }).data.delta).toBe('two\nlines\r\n');
    });

    it("writes through the default scheduler with the database's next group commit", async () => {
      const log = new SessionEventLog(database);
      log.append(eventOf(sessionId));
      expect(storedSeqs(sessionId)).toEqual([]);
      const committed = new Promise<void>((resolve) => log.whenStored(resolve));
      await committed;
      expect(storedSeqs(sessionId)).toEqual([1]);
      expect(database.connection.inTransaction).toBe(false);
    });

    it('writes what is queued when its database closes', () => {
      database.close();
      const file = path.join(dir, 'closing.db');
      open(file);
      sessionId = newSession();
      const log = logOn(database);
      log.append(eventOf(sessionId));
      database.close();
      open(file);
      expect(storedSeqs(sessionId)).toEqual([1]);
      expect(warnings).toEqual([]);
    });

    it('continues from the largest stored number after a reopen', () => {
      database.close();
      const file = path.join(dir, 'events.db');
      open(file);
      sessionId = newSession();
      const first = logOn(database);
      first.append(eventOf(sessionId));
      first.append(eventOf(sessionId));
      first.flush();
      database.close();

      open(file);
      const second = logOn(database);
      expect(second.lastSeq(sessionId)).toBe(2);
      expect(second.append(eventOf(sessionId)).seq).toBe(3);
      expect(second.read(sessionId, 0, 10).map((event) => event.seq)).toEqual([1, 2, 3]);
    });
  });

  describe('read', () => {
    it('pages the events after a seq, oldest first, exactly as they were appended', () => {
      const log = logOn(database);
      const appended = Array.from({ length: 7 }, (_, i) => log.append(eventOf(sessionId, { data: { delta: `d${i}` } })));
      expect(log.read(sessionId, 0, 3)).toEqual(appended.slice(0, 3));
      expect(log.read(sessionId, 3, 3)).toEqual(appended.slice(3, 6));
      expect(log.read(sessionId, 6, 3)).toEqual(appended.slice(6));
      expect(log.read(sessionId, 7, 3)).toEqual([]);
    });

    it('sees events appended in the same tick, before their scheduled write', () => {
      const log = logOn(database);
      log.append(eventOf(sessionId));
      expect(log.read(sessionId, 0, 10).map((event) => event.seq)).toEqual([1]);
      // The scheduled write then has nothing left to do.
      scheduled[0]();
      expect(storedSeqs(sessionId)).toEqual([1]);
    });

    it('pages across rows written by several writes, starting inside a row', () => {
      const log = logOn(database);
      const appended: Array<{ seq: number; json: string }> = [];
      for (const size of [3, 1, 4]) {
        for (let i = 0; i < size; i++) appended.push(log.append(eventOf(sessionId, { data: { delta: `d${appended.length}` } })));
        log.flush();
      }
      expect(storedRows(sessionId)).toBe(3);
      for (let after = 0; after <= 8; after++) {
        for (const limit of [1, 2, 5, 100]) expect(log.read(sessionId, after, limit)).toEqual(appended.slice(after, after + limit));
      }
    });

    it('finds the latest logged request by its type and id, in any row', () => {
      const log = logOn(database);
      const request = (requestId: string, type = 'approval_request') => log.append(eventOf(sessionId, { type, data: { requestId, executionId: 'e1' } }));
      request('r1');
      log.flush();
      log.append(eventOf(sessionId));
      const wanted = request('r2');
      request('r2', 'ask_user_questions');
      log.flush();
      expect(log.findRequest(sessionId, 'approval_request', 'r2')).toEqual(wanted);
      expect(log.findRequest(sessionId, 'approval_request', 'r1')?.seq).toBe(1);
      expect(log.findRequest(sessionId, 'approval_request', 'r')).toBeNull();
      expect(log.findRequest(sessionId, 'tool_request', 'r2')).toBeNull();
    });

    it("answers nothing for another session's numbers", () => {
      const log = logOn(database);
      log.append(eventOf(sessionId));
      expect(log.read(newSession(), 0, 10)).toEqual([]);
    });
  });

  describe('retention', () => {
    it('keeps at most the bound, deleting the oldest a tenth of the bound at a time', () => {
      const log = logOn(database, { maxEventsPerSession: 20 });
      for (let i = 0; i < 20; i++) log.append(eventOf(sessionId));
      log.flush();
      expect(storedSeqs(sessionId)).toHaveLength(20);

      log.append(eventOf(sessionId));
      log.flush();
      // 21 would pass the bound: the oldest go until 18 are left.
      expect(storedSeqs(sessionId)).toEqual(Array.from({ length: 18 }, (_, i) => i + 4));
      log.append(eventOf(sessionId));
      log.append(eventOf(sessionId));
      log.flush();
      expect(storedSeqs(sessionId)).toHaveLength(20);
      expect(log.read(sessionId, 0, 1).map((event) => event.seq)).toEqual([4]);
    });

    it('keeps numbering where it was after pruning, also after a reopen', () => {
      database.close();
      const file = path.join(dir, 'retention.db');
      open(file);
      sessionId = newSession();
      const log = logOn(database, { maxEventsPerSession: 5 });
      for (let i = 0; i < 12; i++) log.append(eventOf(sessionId));
      log.flush();
      expect(Math.max(...storedSeqs(sessionId))).toBe(12);
      expect(storedSeqs(sessionId).length).toBeLessThanOrEqual(5);
      database.close();

      open(file);
      expect(logOn(database, { maxEventsPerSession: 5 }).append(eventOf(sessionId)).seq).toBe(13);
    });

    it('refuses a bound that is not a positive integer', () => {
      for (const bound of [0, -1, 1.5, Number.NaN]) {
        expect(() => logOn(database, { maxEventsPerSession: bound })).toThrow(/maxEventsPerSession/);
      }
    });
  });

  describe('when the store fails', () => {
    it('keeps the events it can write and says how many it lost, without throwing', () => {
      const log = logOn(database);
      const gone = newSession();
      log.append(eventOf(gone));
      log.append(eventOf(sessionId));
      database.connection.prepare('DELETE FROM sessions WHERE id = ?').run(gone);
      expect(() => log.flush()).not.toThrow();
      expect(storedSeqs(sessionId)).toEqual([1]);
      expect(warnings.join('\n')).toMatch(/1 session event\(s\) were not stored: .*FOREIGN KEY/);
    });

    it('drops what is appended once the database is closed, and never gives a number again', () => {
      const log = logOn(database);
      log.append(eventOf(sessionId));
      database.close();
      log.append(eventOf(sessionId));
      expect(() => scheduled[1]()).not.toThrow();
      expect(warnings).toEqual(['1 session event(s) were not stored: the database is closed']);
      expect(log.append(eventOf(sessionId)).seq).toBe(3);
    });
  });
});
