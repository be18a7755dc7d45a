import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import type { ClientEvent } from '../../harness/local/client-event';
import { LocalToolSessionRegistry } from '../../harness/local/local-tool-session-registry';
import { HarnessDatabase } from '../persistence/harness-database';
import { SessionEventLog } from '../persistence/session-event-log';
import { SessionRepository } from '../persistence/session-repository';
import { SLOW_CLIENT_CLOSE_REASON, StreamingWsRegistry, WS_CLOSE_TRY_AGAIN_LATER } from './streaming-ws-registry';
import { FakeWsConnection } from './testing/fake-ws-connection';
import { createErrorEvent, createWsEvent, type WsEvent } from './ws-event';

const USER = 1;
const TIME = 1_700_000_000_000;

/** The frames a fake connection was sent, parsed with their `seq`. */
function received(socket: FakeWsConnection): WsEvent[] {
  return socket.frames.map((frame) => JSON.parse(frame) as WsEvent);
}

function delta(sessionId: number, text: string): WsEvent {
  return createWsEvent('content_delta', sessionId, { delta: text, executionId: 'e1' }, () => TIME);
}

describe('StreamingWsRegistry with an event log', () => {
  let database: HarnessDatabase;
  let log: SessionEventLog;
  let registry: StreamingWsRegistry;
  let sessionA: number;
  let sessionB: number;
  let warnings: string[];

  beforeEach(() => {
    database = new HarnessDatabase(':memory:');
    const sessions = new SessionRepository(database);
    sessionA = sessions.create({ userId: USER, executionMode: 'LOCAL', permissionLevel: 'FULL', workspace: 'a' }).id;
    sessionB = sessions.create({ userId: USER, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'b' }).id;
    warnings = [];
    log = new SessionEventLog(database);
    registry = new StreamingWsRegistry({ eventLog: log, logger: { warn: (message) => warnings.push(message) } });
  });

  afterEach(() => database.close());

  describe('when a wait for a person is sent again', () => {
    const request = (requestId: string): ClientEvent => ({ type: 'approval_request', sessionId: sessionA, data: { requestId, toolName: 'shell', executionId: 'e1' }, timestamp: TIME });

    it('sends the logged event, with its seq and time, without numbering it again', () => {
      registry.sendToUser(USER, delta(sessionA, 'before'));
      registry.sendToUser(USER, request('req-1') as WsEvent);
      registry.sendToUser(USER, delta(sessionA, 'after'));
      const socket = new FakeWsConnection();
      registry.add(USER, socket);

      expect(registry.resendRequest(socket, { ...request('req-1'), timestamp: TIME + 5_000 })).toBe(true);
      expect(socket.frames).toEqual([JSON.stringify({ ...request('req-1'), seq: 2 })]);
      expect(log.lastSeq(sessionA)).toBe(3);
    });

    it('sends the event as given, without a seq, when the log no longer has it', () => {
      const socket = new FakeWsConnection();
      registry.add(USER, socket);

      expect(registry.resendRequest(socket, request('req-gone'))).toBe(true);
      expect(received(socket)).toEqual([request('req-gone')]);
      expect(log.lastSeq(sessionA)).toBe(0);
    });
  });

  describe('when events are sent', () => {
    it('numbers each event of a session, per session, and keeps it, with or without an audience', () => {
      registry.sendToUser(USER, delta(sessionA, 'nobody hears this'));
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      registry.sendToUser(USER, delta(sessionA, 'a'));
      registry.sendToUser(USER, delta(sessionB, 'b'));
      registry.sendToUser(USER, createErrorEvent(sessionA, 'MCP server down', false, 'e1'));

      expect(received(socket).map((event) => [event.sessionId, event.type, event.seq])).toEqual([
        [sessionA, 'content_delta', 2],
        [sessionB, 'content_delta', 1],
        [sessionA, 'error', 3],
      ]);
      expect(log.read(sessionA, 0, 10).map((event) => event.json)).toEqual([
        JSON.stringify({ ...delta(sessionA, 'nobody hears this'), seq: 1 }),
        socket.frames[0],
        socket.frames[2],
      ]);
    });

    it('neither numbers nor keeps an event of no session, or a reply to a frame', () => {
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      registry.sendToUser(USER, createErrorEvent(null, 'connection-level', false));
      registry.send(socket, createErrorEvent(sessionA, "No pending tool request 'r1'", false));

      expect(received(socket).map((event) => Object.keys(event).sort())).toEqual([
        ['data', 'sessionId', 'timestamp', 'type'],
        ['data', 'sessionId', 'timestamp', 'type'],
      ]);
      expect(log.read(sessionA, 0, 10)).toEqual([]);
    });

    it('numbers a LOCAL event once, however many connections it is offered to', () => {
      const local = new LocalToolSessionRegistry({ clients: registry });
      local.bindSession(sessionA, USER);
      const desktop = new FakeWsConnection();
      const laptop = new FakeWsConnection();
      registry.add(USER, desktop);
      registry.add(USER, laptop);

      const { requestId } = local.sendToolRequest(sessionA, { toolName: 'read_file', argumentsJson: '{}', workspace: 'a', needApproval: false, dangerReason: null });
      local.failRequest(requestId, 'the run was cancelled');

      for (const socket of [desktop, laptop]) {
        expect(received(socket).map((event) => [event.type, event.seq])).toEqual([
          ['tool_request', 1],
          ['tool_request_cancelled', 2],
        ]);
      }
      expect(log.read(sessionA, 0, 10).map((event) => event.json)).toEqual(desktop.frames);
    });

    it('still sends an event it could not number, without a seq', () => {
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      database.close();
      expect(registry.sendToUser(USER, delta(sessionA, 'still streamed'))).toBe(1);
      expect(received(socket)[0]).toEqual(delta(sessionA, 'still streamed'));
      expect(warnings.join('\n')).toMatch(/content_delta of session \d+ was not logged/);
    });
  });

  describe('subscribe', () => {
    it('replays the stored events after `after`, then sends the live ones, each once', () => {
      for (let i = 1; i <= 5; i++) registry.sendToUser(USER, delta(sessionA, `d${i}`));
      const socket = new FakeWsConnection();
      registry.add(USER, socket);

      expect(registry.subscribe(socket, sessionA, 2)).toBe(true);
      registry.sendToUser(USER, delta(sessionA, 'd6'));

      expect(received(socket).map((event) => [event.seq, event.data.delta])).toEqual([
        [3, 'd3'],
        [4, 'd4'],
        [5, 'd5'],
        [6, 'd6'],
      ]);
    });

    it('replays the whole log without `after`, across replay pages', () => {
      for (let i = 1; i <= 450; i++) registry.sendToUser(USER, delta(sessionA, `d${i}`));
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      registry.subscribe(socket, sessionA);
      expect(received(socket).map((event) => event.seq)).toEqual(Array.from({ length: 450 }, (_, i) => i + 1));
    });

    it('includes events numbered in the same tick, before the log wrote them', () => {
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      registry.subscribe(socket, sessionB);
      registry.sendToUser(USER, delta(sessionA, 'same tick'));
      registry.subscribe(socket, sessionA);
      expect(received(socket).map((event) => [event.sessionId, event.seq])).toEqual([[sessionA, 1]]);
    });

    it('narrows a connection to the sessions it follows; the others keep receiving everything', () => {
      const webConsole = new FakeWsConnection();
      const desktop = new FakeWsConnection();
      registry.add(USER, webConsole);
      registry.add(USER, desktop);
      registry.subscribe(webConsole, sessionA, log.lastSeq(sessionA));

      registry.sendToUser(USER, delta(sessionA, 'a'));
      registry.sendToUser(USER, delta(sessionB, 'b'));
      registry.sendToUser(USER, createErrorEvent(null, 'of no session', false));

      expect(received(webConsole).map((event) => [event.sessionId, event.type])).toEqual([
        [sessionA, 'content_delta'],
        [null, 'error'],
      ]);
      expect(received(desktop).map((event) => [event.sessionId, event.type])).toEqual([
        [sessionA, 'content_delta'],
        [sessionB, 'content_delta'],
        [null, 'error'],
      ]);
    });

    it('does not offer LOCAL events of other sessions to a narrowed connection', () => {
      const local = new LocalToolSessionRegistry({ clients: registry });
      local.bindSession(sessionA, USER);
      const webConsole = new FakeWsConnection();
      registry.add(USER, webConsole);
      registry.subscribe(webConsole, sessionB);
      expect(local.sendToSession(sessionA, 'ask_user_questions_cancelled', { requestId: 'q1' })).toBe(0);
      expect(webConsole.frames).toEqual([]);
      // Still one event of the session: numbered and kept.
      expect(log.read(sessionA, 0, 10).map((event) => event.seq)).toEqual([1]);
    });

    it('stops after unsubscribe, and a connection left with no session gets only events of no session', () => {
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      registry.subscribe(socket, sessionA);
      expect(registry.unsubscribe(socket, sessionA)).toBe(true);
      expect(registry.unsubscribe(socket, sessionA)).toBe(false);
      registry.sendToUser(USER, delta(sessionA, 'a'));
      registry.sendToUser(USER, createErrorEvent(null, 'of no session', false));
      expect(received(socket).map((event) => event.sessionId)).toEqual([null]);
    });

    it('closes a connection that cannot take the replay as too slow, and does not subscribe it', () => {
      for (let i = 1; i <= 3; i++) registry.sendToUser(USER, delta(sessionA, 'x'.repeat(100)));
      const limited = new StreamingWsRegistry({ eventLog: log, sendBufferLimitBytes: 150, logger: { warn: () => undefined } });
      const stalled = new FakeWsConnection();
      limited.add(USER, stalled);
      // Whatever it is sent stays queued: the client reads nothing.
      const send = stalled.send.bind(stalled);
      stalled.send = (data: string) => {
        send(data);
        stalled.bufferedAmount += Buffer.byteLength(data);
      };

      expect(limited.subscribe(stalled, sessionA)).toBe(false);
      expect(stalled.frames).toHaveLength(1);
      expect(stalled.closes).toEqual([{ code: WS_CLOSE_TRY_AGAIN_LATER, reason: SLOW_CLIENT_CLOSE_REASON }]);
    });

    it('forgets what a connection followed when it is added again', () => {
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      registry.subscribe(socket, sessionA);
      registry.add(USER, socket);
      registry.sendToUser(USER, delta(sessionB, 'b'));
      expect(received(socket).map((event) => event.sessionId)).toEqual([sessionB]);
    });
  });
});

/** A connection whose socket holds what it is sent while corked, as a TCP socket does. */
class CorkableConnection extends FakeWsConnection {
  /** What the client has received: frames written out. */
  readonly delivered: string[] = [];
  private corks = 0;
  private held: string[] = [];
  readonly _socket = {
    cork: () => void this.corks++,
    uncork: () => {
      if (--this.corks > 0) return;
      this.delivered.push(...this.held);
      this.held = [];
    },
  };

  override send(data: string): void {
    super.send(data);
    if (this.corks > 0) this.held.push(data);
    else this.delivered.push(data);
  }
}

describe('StreamingWsRegistry sending only what is stored', () => {
  it("holds a turn's frames until the database committed their events, then sends them in order", () => {
    const checks: Array<() => void> = [];
    const database = new HarnessDatabase(':memory:', { scheduleCheck: (check) => checks.push(check), clock: () => 0 });
    try {
      const sessionId = new SessionRepository(database).create({ userId: USER, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'a' }).id;
      const log = new SessionEventLog(database);
      const registry = new StreamingWsRegistry({ eventLog: log });
      const socket = new CorkableConnection();
      registry.add(USER, socket);
      const storedEvents = () => database.connection.prepare('SELECT COALESCE(SUM(last_seq - first_seq + 1), 0) FROM session_event_batches').pluck().get();
      const endTurn = () => checks.splice(0).forEach((check) => check());

      registry.sendToUser(USER, delta(sessionId, 'a'));
      registry.sendToUser(USER, delta(sessionId, 'b'));
      expect(socket.frames).toHaveLength(2);
      expect(socket.delivered).toEqual([]);
      // The end of the turn that sent them: the writing may go on, nothing is committed yet.
      endTurn();
      expect(storedEvents()).toBe(0);
      expect(socket.delivered).toEqual([]);
      // A quiet turn: the rows are written and committed, then the frames sent.
      endTurn();
      expect(storedEvents()).toBe(2);
      expect(database.connection.inTransaction).toBe(false);
      expect(socket.delivered.map((frame) => (JSON.parse(frame) as WsEvent).seq)).toEqual([1, 2]);
    } finally {
      database.close();
    }
  });
});

describe('StreamingWsRegistry sending only what is stored, to a real WebSocket', () => {
  it('writes the frames held in a turn to the socket only once the database committed their events', async () => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    const connected = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
    const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
    const delivered: WsEvent[] = [];
    client.on('message', (data) => delivered.push(JSON.parse((data as Buffer).toString()) as WsEvent));
    const checks: Array<() => void> = [];
    const database = new HarnessDatabase(':memory:', { scheduleCheck: (check) => checks.push(check), clock: () => 0 });
    try {
      await new Promise<void>((resolve) => client.once('open', () => resolve()));
      const server = await connected;
      const sessionId = new SessionRepository(database).create({ userId: USER, executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'a' }).id;
      const registry = new StreamingWsRegistry({ eventLog: new SessionEventLog(database) });
      registry.add(USER, server);
      const endTurn = () => checks.splice(0).forEach((check) => check());
      const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

      registry.sendToUser(USER, delta(sessionId, 'a'));
      registry.sendToUser(USER, delta(sessionId, 'b'));
      endTurn();
      await settle();
      expect(delivered).toEqual([]);
      expect(server.bufferedAmount).toBe(0);
      // A quiet turn commits the events; their frames go out after it.
      endTurn();
      while (delivered.length < 2) await settle();
      expect(delivered.map((event) => [event.seq, event.data.delta])).toEqual([
        [1, 'a'],
        [2, 'b'],
      ]);
    } finally {
      database.close();
      client.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    }
  });
});

describe('StreamingWsRegistry without an event log', () => {
  it('sends events without a seq and narrows a subscribed connection without a replay', () => {
    const registry = new StreamingWsRegistry();
    const socket = new FakeWsConnection();
    registry.add(USER, socket);
    registry.sendToUser(USER, delta(1, 'before'));
    registry.subscribe(socket, 2);
    registry.sendToUser(USER, delta(1, 'other session'));
    registry.sendToUser(USER, delta(2, 'followed'));
    expect(received(socket)).toEqual([delta(1, 'before'), delta(2, 'followed')]);
  });
});
