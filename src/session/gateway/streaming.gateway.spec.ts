import type { IncomingMessage } from 'node:http';
import { Logger } from '@nestjs/common';
import type { WebSocket } from 'ws';
import { LocalClientDisconnectedError, NoConnectedClientError } from '../../harness/local/local-errors';
import { LocalToolSessionRegistry } from '../../harness/local/local-tool-session-registry';
import { ApprovalRequests } from '../../harness/tool/approval-requests';
import { AskUserQuestionsRegistry } from '../../harness/tool/ask-user-questions-registry';
import { TokenAuthenticator } from '../auth/token-authenticator';
import type { RunService } from '../run/run.service';
import type { SessionService } from '../service/session-service';
import { LOCAL_SESSIONS_NOT_ON_REGISTRY, StreamingGateway, WS_UNAUTHORIZED } from './streaming.gateway';
import { SLOW_CLIENT_CLOSE_REASON, StreamingWsRegistry, WS_CLOSE_TRY_AGAIN_LATER } from '../ws/streaming-ws-registry';
import { FakeWsConnection } from '../ws/testing/fake-ws-connection';

const TOKEN = 'tok-a';
const USER = 1;
const SESSION = 5;
/** Small enough that any queued frame plus the next one passes it. */
const LIMIT = 100;

function setup() {
  const registry = new StreamingWsRegistry({ sendBufferLimitBytes: LIMIT, logger: { warn: () => undefined } });
  const localSessions = new LocalToolSessionRegistry({ clients: registry });
  localSessions.bindSession(SESSION, USER);
  // Every session is the user's: ownership has its own tests.
  const sessions = { getOwned: () => ({}) } as unknown as SessionService;
  const gateway = new StreamingGateway(
    new TokenAuthenticator(new Map([[TOKEN, USER]])),
    registry,
    localSessions,
    new AskUserQuestionsRegistry(),
    new ApprovalRequests(localSessions),
    sessions,
    NO_WAITING_RUNS,
  );
  const connect = (socket: FakeWsConnection, token = TOKEN) =>
    gateway.handleConnection(socket as unknown as WebSocket, { url: `/ws?token=${token}` } as IncomingMessage);
  const disconnect = (socket: FakeWsConnection) => gateway.handleDisconnect(socket as unknown as WebSocket);
  const answer = (socket: FakeWsConnection, requestId: string, result: string) =>
    gateway.onToolResponse(socket as unknown as WebSocket, { type: 'tool_response', sessionId: SESSION, requestId, result });
  return { gateway, registry, localSessions, connect, disconnect, answer };
}

const toolRequest = { toolName: 'read_file', argumentsJson: '{"path":"a.txt"}', workspace: null, needApproval: false, dangerReason: null };


/** Runs with no wait kept across a restart: nothing to send a connecting client. */
const NO_WAITING_RUNS = { waitEventsFor: () => [] } as unknown as RunService;
describe('StreamingGateway', () => {
  it('closes a connection with an unknown token with 4401 and registers nothing', () => {
    const { registry, connect } = setup();
    const socket = new FakeWsConnection();
    connect(socket, 'nope');
    expect(socket.closes).toEqual([{ code: WS_UNAUTHORIZED, reason: 'Unauthorized' }]);
    expect(registry.connectionCount(USER)).toBe(0);
  });

  it('logs an error when its LocalToolSessionRegistry is not built on its StreamingWsRegistry', () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    try {
      const registry = new StreamingWsRegistry();
      const build = (localSessions: LocalToolSessionRegistry) =>
        new StreamingGateway(new TokenAuthenticator(new Map()), registry, localSessions, new AskUserQuestionsRegistry(), new ApprovalRequests(localSessions), {} as SessionService, NO_WAITING_RUNS);
      build(new LocalToolSessionRegistry({ clients: registry }));
      expect(errors).not.toHaveBeenCalled();
      build(new LocalToolSessionRegistry());
      build(new LocalToolSessionRegistry({ clients: new StreamingWsRegistry() }));
      expect(errors.mock.calls).toEqual([[LOCAL_SESSIONS_NOT_ON_REGISTRY], [LOCAL_SESSIONS_NOT_ON_REGISTRY]]);
    } finally {
      errors.mockRestore();
    }
  });

  describe('LOCAL tool requests', () => {
    it('reach every connection of the owner, registered once', () => {
      const { registry, localSessions, connect } = setup();
      const desktop = new FakeWsConnection();
      const laptop = new FakeWsConnection();
      connect(desktop);
      connect(laptop);

      const { requestId } = localSessions.sendToolRequest(SESSION, toolRequest);

      expect(registry.connectionCount(USER)).toBe(2);
      for (const socket of [desktop, laptop]) {
        expect(socket.events()).toEqual([expect.objectContaining({ type: 'tool_request', sessionId: SESSION, data: expect.objectContaining({ requestId }) })]);
      }
    });

    it('fail when the only desktop that received them disconnects mid-call', async () => {
      const { registry, localSessions, connect, disconnect } = setup();
      const desktop = new FakeWsConnection();
      connect(desktop);
      const { promise } = localSessions.sendToolRequest(SESSION, toolRequest);

      disconnect(desktop);

      await expect(promise).rejects.toBeInstanceOf(LocalClientDisconnectedError);
      expect(registry.connectionCount(USER)).toBe(0);
      expect(localSessions.pendingCount()).toBe(0);
    });

    it('are withdrawn from the other connections once one answers, with the answering connection known to the registry', async () => {
      const { localSessions, connect, answer } = setup();
      const desktop = new FakeWsConnection();
      const laptop = new FakeWsConnection();
      connect(desktop);
      connect(laptop);
      const { requestId, promise } = localSessions.sendToolRequest(SESSION, toolRequest);

      answer(desktop, requestId, 'done on the desktop');

      await expect(promise).resolves.toBe('done on the desktop');
      expect(desktop.events().map((event) => event.type)).toEqual(['tool_request']);
      expect(laptop.events().map((event) => [event.type, event.data])).toEqual([
        ['tool_request', expect.objectContaining({ requestId })],
        ['tool_request_cancelled', { requestId, reason: 'answered by another client' }],
      ]);
    });

    it('ignore the frames of a connection after it disconnected', () => {
      const { localSessions, connect, disconnect, answer } = setup();
      const desktop = new FakeWsConnection();
      const laptop = new FakeWsConnection();
      connect(desktop);
      connect(laptop);
      const { requestId } = localSessions.sendToolRequest(SESSION, toolRequest);
      disconnect(desktop);

      answer(desktop, requestId, 'too late');

      expect(localSessions.sessionOfRequest(requestId)).toBe(SESSION);
      expect(desktop.events().map((event) => event.type)).toEqual(['tool_request']);
    });
  });

  describe('when a connection does not read', () => {
    it('holds LOCAL tool requests to the send buffer bound: the stalled connection is closed, the other gets the request', () => {
      const { registry, localSessions, connect } = setup();
      const stalled = new FakeWsConnection(LIMIT);
      const reading = new FakeWsConnection();
      connect(stalled);
      connect(reading);

      localSessions.sendToolRequest(SESSION, toolRequest);

      expect(stalled.frames).toEqual([]);
      expect(stalled.closes).toEqual([{ code: WS_CLOSE_TRY_AGAIN_LATER, reason: SLOW_CLIENT_CLOSE_REASON }]);
      expect(reading.events().map((event) => event.type)).toEqual(['tool_request']);
      expect(registry.connectionCount(USER)).toBe(1);
    });

    it('does not count a request the only, stalled connection did not take as delivered', () => {
      const { localSessions, connect } = setup();
      connect(new FakeWsConnection(LIMIT));
      expect(() => localSessions.sendToolRequest(SESSION, toolRequest)).toThrow(NoConnectedClientError);
    });

    it('holds error replies to the same bound', () => {
      const { gateway, connect } = setup();
      const stalled = new FakeWsConnection(LIMIT);
      connect(stalled);
      gateway.onInvalidFrame(stalled as unknown as WebSocket, { message: 'Frame is not valid JSON' });
      expect(stalled.frames).toEqual([]);
      expect(stalled.closes).toEqual([{ code: WS_CLOSE_TRY_AGAIN_LATER, reason: SLOW_CLIENT_CLOSE_REASON }]);
    });
  });

  describe('subscriptions', () => {
    const OTHERS = 9;

    /** A gateway whose user owns session SESSION only. */
    function subscribing() {
      const registry = new StreamingWsRegistry({ logger: { warn: () => undefined } });
      const sessions = {
        getOwned: (id: number) => {
          if (id !== SESSION) throw new Error(`Session ${id} not found`);
          return {};
        },
      } as unknown as SessionService;
      const gateway = new StreamingGateway(
        new TokenAuthenticator(new Map([[TOKEN, USER]])),
        registry,
        new LocalToolSessionRegistry({ clients: registry }),
        new AskUserQuestionsRegistry(),
        new ApprovalRequests(new LocalToolSessionRegistry({ clients: registry })),
        sessions,
        NO_WAITING_RUNS,
      );
      const socket = new FakeWsConnection();
      gateway.handleConnection(socket as unknown as WebSocket, { url: `/ws?token=${TOKEN}` } as IncomingMessage);
      const frame = (handler: 'onSubscribe' | 'onUnsubscribe', body: Record<string, unknown>) => gateway[handler](socket as unknown as WebSocket, body);
      const delta = (sessionId: number) => registry.sendToUser(USER, { type: 'content_delta', sessionId, data: { delta: 'x' }, timestamp: 1 });
      return { socket, frame, delta };
    }

    it('narrows the connection to the sessions it subscribed to, until it unsubscribes', () => {
      const { socket, frame, delta } = subscribing();
      frame('onSubscribe', { type: 'subscribe', sessionId: SESSION, after: 0 });
      delta(SESSION);
      delta(OTHERS);
      frame('onUnsubscribe', { type: 'unsubscribe', sessionId: SESSION });
      delta(SESSION);
      expect(socket.events().map((event) => event.sessionId)).toEqual([SESSION]);
    });

    it('refuses a foreign or unknown session, or a bad `after`, with an error event and changes nothing', () => {
      const { socket, frame, delta } = subscribing();
      frame('onSubscribe', { type: 'subscribe', sessionId: OTHERS });
      frame('onSubscribe', { type: 'subscribe', sessionId: SESSION, after: -1 });
      frame('onSubscribe', { type: 'subscribe', sessionId: SESSION, after: '3' });
      frame('onSubscribe', { type: 'subscribe' });
      frame('onUnsubscribe', { type: 'unsubscribe', sessionId: OTHERS });
      expect(socket.events().map((event) => [event.type, event.data])).toEqual([
        ['error', { message: `Session ${OTHERS} not found`, final: false }],
        ['error', { message: "subscribe frame field 'after' must be a non-negative integer", final: false }],
        ['error', { message: "subscribe frame field 'after' must be a non-negative integer", final: false }],
        ['error', { message: "subscribe frame needs field 'sessionId' (an integer)", final: false }],
        ['error', { message: `Session ${OTHERS} not found`, final: false }],
      ]);
      // Never subscribed: it still receives every session of its user.
      delta(OTHERS);
      expect(socket.events().at(-1)).toEqual(expect.objectContaining({ type: 'content_delta', sessionId: OTHERS }));
    });
  });

  it('answers an unusable frame with an error event naming the problem', () => {
    const { gateway, connect } = setup();
    const socket = new FakeWsConnection();
    connect(socket);
    gateway.onInvalidFrame(socket as unknown as WebSocket, { message: 'Frame is not valid JSON' });
    expect(socket.events()).toEqual([expect.objectContaining({ type: 'error', data: { message: 'Frame is not valid JSON', final: false } })]);
  });
});
