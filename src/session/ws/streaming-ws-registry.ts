import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { ClientConnection, ClientConnections } from '../../harness/local/client-connections';
import type { ClientEvent } from '../../harness/local/client-event';
import type { SessionEventLog } from '../persistence/session-event-log';
import type { WsEvent } from './ws-event';
import { errorMessage } from '../../harness/runtime/error-message';
import { encodeTextFrames } from './ws-text-frames';

/**
 * The part of a WebSocket the registry needs (the `ws` package's `WebSocket` fits). Only
 * `readyState` and `send` are required, so an in-memory double can stand in for a socket; a
 * connection without `bufferedAmount` counts as having nothing queued, one without `close` and
 * `terminate` cannot be closed by the registry.
 */
export interface WsConnection {
  readonly readyState: number;
  send(data: string): void;
  /** Bytes accepted by `send` that have not yet been handed to the network. */
  readonly bufferedAmount?: number;
  /** Starts the closing handshake. */
  close?(code: number, reason: string): void;
  /** Destroys the connection at once, without a handshake. */
  terminate?(): void;
}

/** How much one connection may have queued, unsent, before it is closed as too slow (8 MiB). */
export const DEFAULT_SEND_BUFFER_LIMIT_BYTES = 8 * 1024 * 1024;

/** How long a too-slow client's closing handshake may take before its socket is destroyed. */
export const DEFAULT_SLOW_CLIENT_CLOSE_GRACE_MS = 2_000;

/** Close code 1013 "Try Again Later": the server dropped a client that did not keep up. */
export const WS_CLOSE_TRY_AGAIN_LATER = 1013;

/** The close reason a too-slow client gets. */
export const SLOW_CLIENT_CLOSE_REASON = 'client did not read fast enough';

export interface StreamingWsRegistryOptions {
  /**
   * Bound on a connection's queued, unsent bytes (default `DEFAULT_SEND_BUFFER_LIMIT_BYTES`).
   * A frame that would take the queue past it is not sent and the connection is closed with
   * 1013. A frame larger than the whole bound still goes to a client with nothing queued.
   */
  sendBufferLimitBytes?: number;
  /** Grace for a too-slow client's close (default `DEFAULT_SLOW_CLIENT_CLOSE_GRACE_MS`). */
  slowClientCloseGraceMs?: number;
  logger?: { warn(message: string): void };
  /** Connection id generator (default `crypto.randomUUID`). */
  newId?: () => string;
  /**
   * Numbers and keeps every event that belongs to a session (its `seq`, interface.md), and serves
   * the replay of a `subscribe`. The server always sets it; without it events carry no `seq`, as
   * before the log existed, and a subscription replays nothing.
   */
  eventLog?: SessionEventLog;
}

/** Who a registered connection is: its id and its user. */
export interface RegisteredConnection {
  readonly id: string;
  readonly userId: number;
}

interface Registration extends RegisteredConnection {
  /** The connection as the LOCAL side sees it: sends go through the bounded path. */
  readonly client: ClientConnection;
}

const OPEN = 1;
const CLOSED = 3;

/** How many stored events a subscription's replay reads from the log at a time. */
const REPLAY_PAGE = 200;

/** How often a flush or a close is checked on: `ws` announces neither on the WebSocket itself. */
const POLL_INTERVAL_MS = 10;

/** The network side of a connection, which can hold writes back and let them go in one. */
interface Corkable {
  cork(): void;
  uncork(): void;
}

/** The TCP socket under a `ws` WebSocket, written to directly (see `frameSocketOf`). */
interface FrameSocket extends Corkable {
  readonly destroyed: boolean;
  write(chunk: Buffer): boolean;
}

/** A connection's frames accepted this turn and not yet written (see the class). */
interface HeldFrames {
  readonly socket: FrameSocket;
  readonly frames: string[];
  readonly byteLengths: number[];
  /** The payload bytes of `frames`. */
  bytes: number;
}

/**
 * The socket of a `ws` WebSocket that the registry may write whole frames to itself (`_socket`,
 * ws 8): one without extensions (the server does not offer compression), whose frames are plain
 * text frames; `null` for any other connection, which is sent to through its `send`.
 */
function frameSocketOf(connection: WsConnection): FrameSocket | null {
  if ((connection as { extensions?: unknown }).extensions !== '') return null;
  const socket = corkableOf(connection) as Partial<FrameSocket> | null;
  return socket && typeof socket.write === 'function' ? (socket as FrameSocket) : null;
}

/**
 * The TCP socket under a `ws` WebSocket (its `_socket`, ws 8), which `cork()` holds writes in:
 * `ws` writes each frame to it as it is sent, one system call per frame otherwise. `null` for a
 * connection that has none (an in-memory double): its frames are sent as they come.
 */
function corkableOf(connection: WsConnection): Corkable | null {
  const socket = (connection as { _socket?: Partial<Corkable> | null })._socket;
  return socket && typeof socket.cork === 'function' && typeof socket.uncork === 'function' ? (socket as Corkable) : null;
}

/**
 * Open WebSocket connections by user, and the one place that sends frames to them. Events for a
 * user with no open connection are dropped: runs go on without an audience and the stored
 * messages stay complete. It is also the `ClientConnections` of the LOCAL side, so that a socket
 * is registered once: tool requests and questions go through the same bounded sends, and a
 * connection's closing (`remove`) reaches the requests and questions it was holding.
 *
 * Every event of a session passes here, so here it is numbered and logged (`eventLog`): the
 * events of `sendToUser` and those the LOCAL side sends, each once however many connections it
 * goes to. Replies to one connection's frame (`send`) belong to no session's history and are not.
 * A connection that subscribed to sessions (`subscribe`) receives only their events, and those of
 * no session; one that never did receives every event of its user.
 *
 * Frames are written out once per turn of the event loop, not one by one: a turn's frames to a
 * `ws` connection are held and then written to its socket as one buffer of whole text frames
 * (`encodeTextFrames`), in order; `ws` itself would make two writes of each (header, payload). A
 * connection of another kind is corked at the turn's first frame and uncorked with the others.
 * With an event log they leave only once the events they carry are committed
 * (`SessionEventLog.whenStored`, after the database's group commit): a client is never told of
 * an event that a crash could take back. Each frame stays one event.
 *
 * Every connection has a bounded send buffer. A client that stops reading would otherwise make
 * the server queue every event of every run in memory; instead it is closed with 1013 (and
 * destroyed if it does not read even the close), while the user's other connections go on
 * receiving everything.
 */
export class StreamingWsRegistry implements ClientConnections {
  /** The send buffer bound in force (see `StreamingWsRegistryOptions.sendBufferLimitBytes`). */
  readonly sendBufferLimitBytes: number;
  private readonly slowClientCloseGraceMs: number;
  private readonly logger: { warn(message: string): void };
  private readonly newId: () => string;
  /** Every connection added and not yet removed, including those dropped as too slow or for shutdown. */
  private readonly registrations = new Map<WsConnection, Registration>();
  private readonly closeListeners: Array<(connectionId: string) => void> = [];
  /** The connections that receive events. */
  private readonly byUser = new Map<number, Set<WsConnection>>();
  private readonly userOf = new Map<WsConnection, number>();
  /** Connections the registry has started to close and that are not closed yet. */
  private readonly closing = new Set<WsConnection>();
  /** The sessions each subscribed connection follows; a connection that never subscribed has no entry. */
  private readonly subscriptions = new Map<WsConnection, Set<number>>();
  private readonly eventLog: SessionEventLog | null;
  /**
   * The frame of each LOCAL event already numbered. The LOCAL side offers one event object to
   * each of the owner's connections in turn (`ClientConnection.send`): that object is one event
   * of the session, so it is numbered at its first offer and every connection gets the same frame.
   */
  private readonly localFrames = new WeakMap<ClientEvent, string>();
  /** Sessions whose events are dropped: their runs were left waiting by a stopping server. */
  private readonly muted = new Set<number>();
  /** Sockets corked this turn, uncorked together once the turn's events are stored. */
  private readonly corked = new Set<Corkable>();
  /** Each `ws` connection's frames of this turn, written together once the turn's events are stored. */
  private held = new Map<WsConnection, HeldFrames>();
  private releaseScheduled = false;

  constructor(options: StreamingWsRegistryOptions = {}) {
    this.sendBufferLimitBytes = options.sendBufferLimitBytes ?? DEFAULT_SEND_BUFFER_LIMIT_BYTES;
    this.slowClientCloseGraceMs = options.slowClientCloseGraceMs ?? DEFAULT_SLOW_CLIENT_CLOSE_GRACE_MS;
    this.logger = options.logger ?? new Logger('StreamingWsRegistry');
    this.newId = options.newId ?? randomUUID;
    this.eventLog = options.eventLog ?? null;
  }

  /**
   * Registers an open connection of `userId`: it receives the user's events from now on. Returns
   * the connection's new id. Adding a connection again replaces its registration, as if it had
   * been removed first.
   */
  add(userId: number, connection: WsConnection): string {
    const earlier = this.registrations.get(connection);
    if (earlier) this.remove(earlier.userId, connection);
    const id = this.newId();
    this.registrations.set(connection, { id, userId, client: { id, send: (event) => this.sendLocalEvent(connection, event) } });
    const set = this.byUser.get(userId) ?? new Set<WsConnection>();
    set.add(connection);
    this.byUser.set(userId, set);
    this.userOf.set(connection, userId);
    return id;
  }

  /**
   * Forgets a connection of `userId` that closed, and tells the `onConnectionClosed` listeners.
   * A connection the registry dropped already (too slow, shutdown) receives nothing since, but
   * only closes here.
   */
  remove(userId: number, connection: WsConnection): void {
    const registration = this.registrations.get(connection);
    if (registration?.userId !== userId) return;
    this.registrations.delete(connection);
    this.forget(connection);
    for (const listener of this.closeListeners) {
      try {
        listener(registration.id);
      } catch (error) {
        this.logger.warn(`a listener failed on the close of connection ${registration.id}: ${errorMessage(error)}`);
      }
    }
  }

  /**
   * The id and user of a connection added and not yet removed — also of one dropped as too slow,
   * whose frames still count until it closes — or `undefined`.
   */
  identify(connection: WsConnection): RegisteredConnection | undefined {
    const registration = this.registrations.get(connection);
    return registration && { id: registration.id, userId: registration.userId };
  }

  /** The user's connections that receive events, oldest first (`ClientConnections`). */
  connectionsOf(userId: number): ClientConnection[] {
    const clients: ClientConnection[] = [];
    for (const connection of this.byUser.get(userId) ?? []) {
      const registration = this.registrations.get(connection);
      if (registration) clients.push(registration.client);
    }
    return clients;
  }

  /** Calls `listener` with the id of every connection removed from now on (`ClientConnections`). */
  onConnectionClosed(listener: (connectionId: string) => void): void {
    this.closeListeners.push(listener);
  }

  /** Open connections of the user that still receive events. */
  connectionCount(userId: number): number {
    return this.byUser.get(userId)?.size ?? 0;
  }

  /**
   * Sends to every open connection of the user that follows the event's session (all of them,
   * for an event of no session); returns how many took it. An event of a session is numbered and
   * logged first, whoever receives it. Never throws.
   */
  sendToUser(userId: number, event: WsEvent): number {
    if (event.sessionId !== null && this.muted.has(event.sessionId)) return 0;
    const frame = this.frameOf(event);
    const set = this.byUser.get(userId);
    if (!set) return 0;
    const bytes = Buffer.byteLength(frame);
    let delivered = 0;
    // A too-slow connection leaves the set while it is iterated: a Set allows that.
    for (const connection of set) {
      if (this.follows(connection, event.sessionId) && this.sendFrame(connection, frame, bytes)) delivered++;
    }
    return delivered;
  }

  /**
   * Sends one event to one connection, within its send buffer bound; returns whether it took
   * it. A closed, failing or too-slow connection has not. Never throws. For replies to the
   * connection's own frames: the event is neither numbered nor logged.
   */
  send(connection: WsConnection, event: WsEvent | ClientEvent): boolean {
    const frame = JSON.stringify(event);
    return this.sendFrame(connection, frame, Buffer.byteLength(frame));
  }

  /**
   * Sends a wait for a person again (`approval_request`, `ask_user_questions`, `tool_request`):
   * as it was first sent and logged, `seq` and `timestamp` included, when the session's event log
   * still has it; otherwise as given, without a `seq`. Neither numbered nor logged again.
   */
  resendRequest(connection: WsConnection, event: ClientEvent): boolean {
    const requestId = event.data.requestId;
    let logged: string | null = null;
    if (this.eventLog && event.sessionId !== null && typeof requestId === 'string') {
      try {
        logged = this.eventLog.findRequest(event.sessionId, event.type, requestId)?.json ?? null;
      } catch (error) {
        this.logger.warn(`the logged ${event.type} ${requestId} could not be read: ${errorMessage(error)}`);
      }
    }
    if (logged === null) return this.send(connection, event);
    return this.sendFrame(connection, logged, Buffer.byteLength(logged));
  }

  /**
   * Makes the connection follow `sessionId`: it is sent the session's stored events numbered
   * after `after`, oldest first, then every new event of the session as it comes. From its first
   * subscription on, a connection receives only the events of the sessions it follows (and those
   * of no session). The caller checks that the connection's user owns the session.
   *
   * The replay and the live events meet without a gap or a repeat: from the read of the log to
   * the start of following, nothing yields (the database is synchronous), so no event of the
   * session can be numbered in between. Replayed frames go through the send buffer bound like
   * any other: a connection that cannot take them all is closed as too slow. Returns whether the
   * connection now follows the session.
   */
  subscribe(connection: WsConnection, sessionId: number, after = 0): boolean {
    if (!this.userOf.has(connection)) return false;
    if (this.eventLog) {
      for (let cursor = after; ; ) {
        const page = this.eventLog.read(sessionId, cursor, REPLAY_PAGE);
        for (const event of page) {
          if (!this.sendFrame(connection, event.json, Buffer.byteLength(event.json))) return false;
          cursor = event.seq;
        }
        if (page.length < REPLAY_PAGE) break;
      }
    }
    const followed = this.subscriptions.get(connection) ?? new Set<number>();
    followed.add(sessionId);
    this.subscriptions.set(connection, followed);
    return true;
  }

  /**
   * Stops the connection following `sessionId`; returns whether it did. The connection stays
   * subscribed-only: without any session left it receives only events of no session.
   */
  unsubscribe(connection: WsConnection, sessionId: number): boolean {
    return this.subscriptions.get(connection)?.delete(sessionId) ?? false;
  }

  /**
   * Drops every later event of the session, unsent and unlogged: for a stopping server that
   * leaves the session's run waiting, so that what the stop itself undoes in memory (waits
   * withdrawn, the run interrupted) is never announced as if the run had ended.
   */
  mute(sessionId: number): void {
    this.muted.add(sessionId);
  }

  /**
   * Closes every connection, for shutdown: each first gets until `timeoutMs` to flush what is
   * already queued, then is closed with `code` and `reason`; whatever is still open at the
   * deadline is destroyed. Connections leave the registry at once, so no later event is queued
   * behind the close. Resolves when every connection is closed or destroyed.
   */
  async closeAll(code: number, reason: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const open = [...this.userOf.keys()];
    const alreadyClosing = [...this.closing];
    for (const connection of open) this.forget(connection);
    await Promise.all([
      ...open.map(async (connection) => {
        await pollUntil(() => connection.readyState !== OPEN || (connection.bufferedAmount ?? 0) === 0, deadline);
        await this.closeBy(connection, code, reason, deadline);
      }),
      ...alreadyClosing.map((connection) => this.settleBy(connection, deadline)),
    ]);
  }

  /** `ClientConnection.send` of the LOCAL side: an event of a session, offered to one connection. */
  private sendLocalEvent(connection: WsConnection, event: ClientEvent): boolean {
    if (event.sessionId !== null && this.muted.has(event.sessionId)) return false;
    let frame = this.localFrames.get(event);
    if (frame === undefined) {
      frame = this.frameOf(event);
      this.localFrames.set(event, frame);
    }
    return this.follows(connection, event.sessionId) && this.sendFrame(connection, frame, Buffer.byteLength(frame));
  }

  /** The JSON of an event; an event of a session is numbered and logged first. */
  private frameOf(event: WsEvent | ClientEvent): string {
    if (this.eventLog && event.sessionId !== null) {
      const { type, sessionId, data, timestamp } = event;
      try {
        return this.eventLog.append({ type, sessionId, data, timestamp }).json;
      } catch (error) {
        // The audience still gets the event, without a number: the log is not worth the stream.
        this.logger.warn(`event ${type} of session ${sessionId} was not logged: ${errorMessage(error)}`);
      }
    }
    return JSON.stringify(event);
  }

  /** Whether the connection receives events of `sessionId` (null: of no session). */
  private follows(connection: WsConnection, sessionId: number | null): boolean {
    const followed = this.subscriptions.get(connection);
    return followed === undefined || sessionId === null || followed.has(sessionId);
  }

  private sendFrame(connection: WsConnection, frame: string, bytes: number): boolean {
    if (connection.readyState !== OPEN) return false;
    const held = this.held.get(connection);
    const queued = (connection.bufferedAmount ?? 0) + (held?.bytes ?? 0);
    // Checked before sending, so the queue never grows past the bound; an empty queue takes any
    // frame, or one event larger than the bound would cut off every client, however fast.
    if (queued > 0 && queued + bytes > this.sendBufferLimitBytes) {
      this.closeTooSlow(connection, queued);
      return false;
    }
    const socket = held?.socket ?? frameSocketOf(connection);
    if (socket !== null) {
      this.hold(connection, socket, held, frame, bytes);
      return true;
    }
    this.cork(connection);
    try {
      connection.send(frame);
      return true;
    } catch {
      return false;
    }
  }

  /** Keeps a frame for the connection's one write of the turn (see the class). */
  private hold(connection: WsConnection, socket: FrameSocket, held: HeldFrames | undefined, frame: string, bytes: number): void {
    if (held) {
      held.frames.push(frame);
      held.byteLengths.push(bytes);
      held.bytes += bytes;
      return;
    }
    this.held.set(connection, { socket, frames: [frame], byteLengths: [bytes], bytes });
    this.scheduleRelease();
  }

  /** Holds the connection's writes until the turn's events are stored (see the class). */
  private cork(connection: WsConnection): void {
    const socket = corkableOf(connection);
    if (socket === null) return;
    this.corkSocket(socket);
  }

  private corkSocket(socket: Corkable): void {
    if (this.corked.has(socket)) return;
    socket.cork();
    this.corked.add(socket);
    this.scheduleRelease();
  }

  private scheduleRelease(): void {
    if (this.releaseScheduled) return;
    this.releaseScheduled = true;
    const release = () => this.releaseAll();
    if (this.eventLog) this.eventLog.whenStored(release);
    else setImmediate(release);
  }

  /** The turn's events are stored: writes the held frames and uncorks the corked sockets. */
  private releaseAll(): void {
    this.releaseScheduled = false;
    const held = this.held;
    this.held = new Map();
    for (const [connection, frames] of held) this.writeHeld(connection, frames);
    for (const socket of this.corked) {
      try {
        socket.uncork();
      } catch {
        // A socket that fails here failed for its connection alone; the close path deals with it.
      }
    }
    this.corked.clear();
  }

  private closeTooSlow(connection: WsConnection, queued: number): void {
    const userId = this.userOf.get(connection);
    this.forget(connection);
    this.logger.warn(
      `closing a connection of user ${userId ?? '?'} that does not read: ${queued} bytes unsent, send buffer bound ${this.sendBufferLimitBytes}`,
    );
    // The close frame waits behind everything queued: a client that resumes reading within the
    // grace gets it all and learns why; one that does not is destroyed, freeing the buffer.
    void this.closeBy(connection, WS_CLOSE_TRY_AGAIN_LATER, SLOW_CLIENT_CLOSE_REASON, Date.now() + this.slowClientCloseGraceMs);
  }

  /**
   * Writes a connection's held frames to its socket in one buffer. A connection that is no longer
   * open gets nothing more, as `ws` sends nothing once a close has begun.
   */
  private writeHeld(connection: WsConnection, held: HeldFrames): void {
    if (connection.readyState !== OPEN || held.socket.destroyed) return;
    try {
      held.socket.write(encodeTextFrames(held.frames, held.byteLengths));
    } catch {
      // A socket that fails here failed for its connection alone; the close path deals with it.
    }
  }

  /**
   * Before a connection's close frame: its held frames go to its socket first, corked until the
   * turn's events are stored, so they still leave only then, and before the close.
   */
  private releaseBeforeClose(connection: WsConnection): void {
    const held = this.held.get(connection);
    if (!held) return;
    this.held.delete(connection);
    this.corkSocket(held.socket);
    this.writeHeld(connection, held);
  }

  /** Starts the closing handshake and destroys the connection if it is not closed by `deadline`. */
  private async closeBy(connection: WsConnection, code: number, reason: string, deadline: number): Promise<void> {
    this.releaseBeforeClose(connection);
    try {
      connection.close?.(code, reason);
    } catch {
      // `ws` refuses some codes and reasons over 123 bytes: the connection must go all the same.
      connection.terminate?.();
    }
    await this.settleBy(connection, deadline);
  }

  /** Waits for a closing connection to close, destroying it at `deadline`. */
  private async settleBy(connection: WsConnection, deadline: number): Promise<void> {
    this.closing.add(connection);
    try {
      if (!(await pollUntil(() => connection.readyState === CLOSED, deadline))) connection.terminate?.();
    } finally {
      this.closing.delete(connection);
    }
  }

  private forget(connection: WsConnection): void {
    const userId = this.userOf.get(connection);
    if (userId === undefined) return;
    this.userOf.delete(connection);
    this.subscriptions.delete(connection);
    const set = this.byUser.get(userId);
    set?.delete(connection);
    if (set?.size === 0) this.byUser.delete(userId);
  }
}

/** Resolves `true` once `condition` holds, or `false` if it still does not at `deadline`. */
async function pollUntil(condition: () => boolean, deadline: number): Promise<boolean> {
  while (!condition()) {
    const left = deadline - Date.now();
    if (left <= 0) return false;
    await new Promise<void>((resolve) => setTimeout(resolve, Math.min(POLL_INTERVAL_MS, left)));
  }
  return true;
}
