import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { NoConnectedClientError } from '../../harness/local/local-errors';
import { LocalToolSessionRegistry } from '../../harness/local/local-tool-session-registry';
import { AskUserQuestionsRegistry } from '../../harness/tool/ask-user-questions-registry';
import { TokenAuthenticator } from '../auth/token-authenticator';
import type { RunService } from '../run/run.service';
import type { SessionService } from '../session-service';
import { StreamingGateway, WS_UNAUTHORIZED } from './streaming.gateway';
import { SLOW_CLIENT_CLOSE_REASON, StreamingWsRegistry, WS_CLOSE_TRY_AGAIN_LATER } from './streaming-ws-registry';
import { FakeWsConnection } from './testing/fake-ws-connection';

const TOKEN = 'tok-a';
const USER = 1;
const SESSION = 5;
/** Small enough that any queued frame plus the next one passes it. */
const LIMIT = 100;

function setup() {
  const registry = new StreamingWsRegistry({ sendBufferLimitBytes: LIMIT, logger: { warn: () => undefined } });
  const localSessions = new LocalToolSessionRegistry();
  localSessions.bindSession(SESSION, USER);
  const gateway = new StreamingGateway(
    new TokenAuthenticator(new Map([[TOKEN, USER]])),
    registry,
    localSessions,
    new AskUserQuestionsRegistry(),
    {} as SessionService,
    {} as RunService,
  );
  const connect = (socket: FakeWsConnection, token = TOKEN) =>
    gateway.handleConnection(socket as unknown as WebSocket, { url: `/ws?token=${token}` } as IncomingMessage);
  return { gateway, registry, localSessions, connect };
}

const toolRequest = { toolName: 'read_file', argumentsJson: '{"path":"a.txt"}', workspace: null, needApproval: false, dangerReason: null };

describe('StreamingGateway', () => {
  it('closes a connection with an unknown token with 4401 and registers nothing', () => {
    const { registry, connect } = setup();
    const socket = new FakeWsConnection();
    connect(socket, 'nope');
    expect(socket.closes).toEqual([{ code: WS_UNAUTHORIZED, reason: 'Unauthorized' }]);
    expect(registry.connectionCount(USER)).toBe(0);
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

  it('answers an unusable frame with an error event naming the problem', () => {
    const { gateway, connect } = setup();
    const socket = new FakeWsConnection();
    connect(socket);
    gateway.onInvalidFrame(socket as unknown as WebSocket, { message: 'Frame is not valid JSON' });
    expect(socket.events()).toEqual([expect.objectContaining({ type: 'error', data: { message: 'Frame is not valid JSON', final: false } })]);
  });
});
