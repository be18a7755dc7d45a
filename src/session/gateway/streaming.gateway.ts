import type { IncomingMessage } from 'node:http';
import { Logger } from '@nestjs/common';
import { ConnectedSocket, MessageBody, SubscribeMessage, WebSocketGateway, type OnGatewayConnection, type OnGatewayDisconnect } from '@nestjs/websockets';
import type { WebSocket } from 'ws';
import { LocalToolSessionRegistry } from '../../harness/local/local-tool-session-registry';
import { ApprovalRequests } from '../../harness/tool/approval-requests';
import { AskUserQuestionsRegistry } from '../../harness/tool/ask-user-questions-registry';
import { TokenAuthenticator } from '../auth/token-authenticator';
import { RunService } from '../run/run.service';
import { SessionService } from '../service/session-service';
import { INVALID_FRAME, MAX_CLIENT_FRAME_BYTES, optionalSeq, requireField } from './client-frame';
import { StreamingWsRegistry, type RegisteredConnection } from '../ws/streaming-ws-registry';
import { createErrorEvent } from '../ws/ws-event';

/** What the gateway logs when its `LocalToolSessionRegistry` is not built on its `StreamingWsRegistry`. */
export const LOCAL_SESSIONS_NOT_ON_REGISTRY =
  'LOCAL tool requests and questions will reach no client: build the LocalToolSessionRegistry on the StreamingWsRegistry ' +
  '(new LocalToolSessionRegistry({ clients: wsRegistry, executions: ExecutionScope }))';

/** The longest message kept with an approval or a denial (the model reads it). */
const MAX_APPROVAL_MESSAGE_CHARS = 2_000;

/** Close code for a missing or unknown token (interface.md). */
export const WS_UNAUTHORIZED = 4401;

/**
 * The WebSocket endpoint `/ws?token=...`: authenticates connections, registers them — once, in
 * the `StreamingWsRegistry`, which serves both the user's event stream and the LOCAL side
 * (`LocalToolSessionRegistry` must be built on that registry) — and applies client frames. A
 * client can only answer, cancel or subscribe to its own user's sessions; any frame it cannot use
 * gets an `error` event and changes nothing.
 */
@WebSocketGateway({ path: '/ws', maxPayload: MAX_CLIENT_FRAME_BYTES })
export class StreamingGateway implements OnGatewayConnection, OnGatewayDisconnect {
  private readonly logger = new Logger('StreamingGateway');

  private readonly deps: {
    authenticator: TokenAuthenticator;
    registry: StreamingWsRegistry;
    localSessions: LocalToolSessionRegistry;
    askUserQuestions: AskUserQuestionsRegistry;
    approvals: ApprovalRequests;
    sessions: SessionService;
    runs: RunService;
  };

  constructor(
    authenticator: TokenAuthenticator,
    registry: StreamingWsRegistry,
    localSessions: LocalToolSessionRegistry,
    askUserQuestions: AskUserQuestionsRegistry,
    approvals: ApprovalRequests,
    sessions: SessionService,
    runs: RunService,
  ) {
    // A LOCAL side built on other connections never sees the sockets registered here. Said, not
    // thrown: Nest would end the process, and every other part of the server still works.
    if (!localSessions.isBuiltOn(registry)) this.logger.error(LOCAL_SESSIONS_NOT_ON_REGISTRY);
    this.deps = { authenticator, registry, localSessions, askUserQuestions, approvals, sessions, runs };
  }

  handleConnection(client: WebSocket, request: IncomingMessage): void {
    const token = new URL(request.url ?? '/', 'http://localhost').searchParams.get('token');
    const userId = this.deps.authenticator.userFor(token);
    if (userId === undefined) {
      client.close(WS_UNAUTHORIZED, 'Unauthorized');
      return;
    }
    const connectionId = this.deps.registry.add(userId, client);
    client.on('error', (error) => this.logger.warn(`connection ${connectionId}: ${error.message}`));
    // Runs that wait for this user since a restart: the waits again, as they were first sent.
    for (const event of this.deps.runs.waitEventsFor(userId)) this.deps.registry.resendRequest(client, event);
  }

  /** The registry tells the LOCAL side: requests and questions only this connection held end. */
  handleDisconnect(client: WebSocket): void {
    const connection = this.deps.registry.identify(client);
    if (connection) this.deps.registry.remove(connection.userId, client);
  }

  @SubscribeMessage('tool_response')
  onToolResponse(@ConnectedSocket() client: WebSocket, @MessageBody() frame: Record<string, unknown>): void {
    this.handle(client, frame, (connection) => {
      const sessionId = this.ownedSession(connection, frame);
      const requestId = requireField(frame, 'requestId', 'string');
      if (!requestId.ok) return requestId.message;
      const result = requireField(frame, 'result', 'string');
      if (!result.ok) return result.message;
      if (sessionId === null) return `Session ${String(frame.sessionId)} not found`;
      if (this.deps.localSessions.sessionOfRequest(requestId.value) === undefined) {
        // Not a request of this process: perhaps one that a run kept across a restart.
        return this.deps.runs.answerWait({ kind: 'local_tool', userId: connection.userId, sessionId, requestId: requestId.value, result: result.value });
      }
      if (this.deps.localSessions.sessionOfRequest(requestId.value) !== sessionId
        || !this.deps.localSessions.completeRequest(requestId.value, result.value, connection.userId, connection.id)) {
        return `No pending tool request '${requestId.value}' for session ${sessionId}`;
      }
      return null;
    });
  }

  @SubscribeMessage('ask_user_answer')
  onAskUserAnswer(@ConnectedSocket() client: WebSocket, @MessageBody() frame: Record<string, unknown>): void {
    this.handle(client, frame, (connection) => {
      const sessionId = this.ownedSession(connection, frame);
      const requestId = requireField(frame, 'requestId', 'string');
      if (!requestId.ok) return requestId.message;
      if (!('answers' in frame)) return "ask_user_answer frame needs field 'answers'";
      if (sessionId === null) return `Session ${String(frame.sessionId)} not found`;
      if (this.deps.askUserQuestions.sessionOf(requestId.value) === undefined) {
        return this.deps.runs.answerWait({ kind: 'question', userId: connection.userId, sessionId, requestId: requestId.value, answers: frame.answers });
      }
      if (this.deps.askUserQuestions.sessionOf(requestId.value) !== sessionId
        || !this.deps.askUserQuestions.complete(requestId.value, frame.answers)) {
        return `No pending questions '${requestId.value}' for session ${sessionId}`;
      }
      return null;
    });
  }

  /**
   * `{type:"approval_response", sessionId, requestId, approved, message?, arguments?}`: approves or
   * denies the pending CLOUD call it names. The stored request decides what runs; an answer from
   * another user or session, for an unknown request, or echoing other arguments changes nothing.
   */
  @SubscribeMessage('approval_response')
  onApprovalResponse(@ConnectedSocket() client: WebSocket, @MessageBody() frame: Record<string, unknown>): void {
    this.handle(client, frame, (connection) => {
      const sessionId = this.ownedSession(connection, frame);
      const requestId = requireField(frame, 'requestId', 'string');
      if (!requestId.ok) return requestId.message;
      if (typeof frame.approved !== 'boolean') return "approval_response frame needs field 'approved' (true or false)";
      if (frame.message !== undefined && typeof frame.message !== 'string') return "approval_response field 'message' must be a string";
      if (sessionId === null) return `Session ${String(frame.sessionId)} not found`;
      const message = typeof frame.message === 'string' ? { message: frame.message.slice(0, MAX_APPROVAL_MESSAGE_CHARS) } : {};
      const echoesArguments = Object.prototype.hasOwnProperty.call(frame, 'arguments');
      if (!this.deps.approvals.knows(requestId.value)) {
        // Not a request of this process: perhaps one that a run kept across a restart.
        return this.deps.runs.answerWait({
          kind: 'approval',
          userId: connection.userId,
          sessionId,
          requestId: requestId.value,
          approved: frame.approved,
          ...message,
          echoesArguments,
          ...(echoesArguments ? { arguments: frame.arguments } : {}),
        });
      }
      return this.deps.approvals.answer({
        userId: connection.userId,
        sessionId,
        requestId: requestId.value,
        approved: frame.approved,
        ...message,
        ...(echoesArguments ? { arguments: frame.arguments } : {}),
      });
    });
  }

  @SubscribeMessage('cancel')
  onCancel(@ConnectedSocket() client: WebSocket, @MessageBody() frame: Record<string, unknown>): void {
    this.handle(client, frame, (connection) => {
      const sessionId = this.ownedSession(connection, frame);
      if (sessionId === null) return `Session ${String(frame.sessionId)} not found`;
      this.deps.runs.cancel(sessionId);
      return null;
    });
  }

  /**
   * `{type:"subscribe", sessionId, after?}`: the connection gets the session's stored events
   * numbered after `after` (all of them without it), then its live ones; from its first
   * subscription on, only the events of the sessions it subscribed to.
   */
  @SubscribeMessage('subscribe')
  onSubscribe(@ConnectedSocket() client: WebSocket, @MessageBody() frame: Record<string, unknown>): void {
    this.handle(client, frame, (connection) => {
      const sessionId = this.ownedSession(connection, frame);
      const after = optionalSeq(frame, 'after');
      if (!after.ok) return after.message;
      if (sessionId === null) return `Session ${String(frame.sessionId)} not found`;
      this.deps.registry.subscribe(client, sessionId, after.value);
      return null;
    });
  }

  /** `{type:"unsubscribe", sessionId}`: the connection stops receiving the session's events. */
  @SubscribeMessage('unsubscribe')
  onUnsubscribe(@ConnectedSocket() client: WebSocket, @MessageBody() frame: Record<string, unknown>): void {
    this.handle(client, frame, (connection) => {
      const sessionId = this.ownedSession(connection, frame);
      if (sessionId === null) return `Session ${String(frame.sessionId)} not found`;
      this.deps.registry.unsubscribe(client, sessionId);
      return null;
    });
  }

  @SubscribeMessage(INVALID_FRAME)
  onInvalidFrame(@ConnectedSocket() client: WebSocket, @MessageBody() data: { message: string }): void {
    this.handle(client, data, () => data.message);
  }

  /** Runs a frame handler; a returned string (or a throw) is reported to the client as an `error` event. */
  private handle(client: WebSocket, frame: Record<string, unknown>, apply: (connection: RegisteredConnection) => string | null): void {
    const connection = this.deps.registry.identify(client);
    if (!connection) return;
    let problem: string | null;
    try {
      problem = apply(connection);
    } catch (error) {
      if (error instanceof FrameFieldError) {
        problem = error.message;
      } else {
        this.logger.error(`frame from user ${connection.userId} failed: ${error instanceof Error ? error.stack : String(error)}`);
        problem = 'The frame could not be processed';
      }
    }
    if (problem !== null) {
      const sessionId = Number.isSafeInteger(frame.sessionId) ? (frame.sessionId as number) : null;
      this.deps.registry.send(client, createErrorEvent(sessionId, problem, false));
    }
  }

  /** The frame's session id if the connection's user owns that session; otherwise null. */
  private ownedSession(connection: RegisteredConnection, frame: Record<string, unknown>): number | null {
    const sessionId = requireField(frame, 'sessionId', 'integer');
    if (!sessionId.ok) throw new FrameFieldError(sessionId.message);
    try {
      this.deps.sessions.getOwned(sessionId.value, connection.userId);
      return sessionId.value;
    } catch {
      return null;
    }
  }
}

class FrameFieldError extends Error {}
