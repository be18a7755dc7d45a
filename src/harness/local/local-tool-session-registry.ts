import { randomUUID } from 'node:crypto';
import type { ClientEvent, ClientEventSink } from './client-event';
import { LocalClientDisconnectedError, LocalRunCancelledError, NoConnectedClientError } from './local-errors';
import { ExecutionScope } from '../core/execution-scope';

/** What the desktop client needs to run one tool call. */
export interface LocalToolRequest {
  toolName: string;
  /** The model's arguments, forwarded as the raw JSON string. */
  argumentsJson: string;
  workspace: string | null;
  /** Whether the desktop must ask the user before running the tool. */
  needApproval: boolean;
  /** Why approval is needed, shown to the user; `null` when there is nothing to say. */
  dangerReason: string | null;
}

export interface LocalToolSessionRegistryOptions {
  /** Clock for event timestamps (default `Date.now`). */
  now?: () => number;
  /** Request id generator (default `crypto.randomUUID`). */
  newId?: () => string;
}

interface Connection {
  userId: number;
  send: ClientEventSink;
}

interface Watch {
  connections: Set<string>;
  onGone: () => void;
}

/** What `sendWatched` returns. */
export interface WatchedDelivery {
  /** How many connections accepted the event. */
  delivered: number;
  /** Stops watching (the event was answered or withdrawn); `onGone` will not be called. */
  release(): void;
}

interface PendingRequest {
  sessionId: number;
  toolName: string;
  /** The run that sent the request, when it was sent inside one. */
  executionId: string | undefined;
  /** Connections that accepted the request and could still answer it. */
  deliveredTo: Set<string>;
  resolve: (result: string) => void;
  reject: (error: Error) => void;
}

/** The reason `tool_request_cancelled` gives the user's other connections once one has answered. */
export const ANSWERED_ELSEWHERE = 'answered by another client';

/** How many cancelled runs are remembered to refuse their late tool requests. */
const MAX_CANCELLED_RUNS = 10_000;

/**
 * Who is connected, which user owns which session, and the LOCAL tool requests waiting for an
 * answer from a desktop client. The WebSocket layer feeds it connections and `tool_response`
 * frames; the executor sends requests through it.
 *
 * Events for a session go to every open connection of the session's owner (the user may have the
 * desktop app open twice); the first answer from that user wins.
 */
export class LocalToolSessionRegistry {
  private readonly now: () => number;
  private readonly newId: () => string;
  private readonly connections = new Map<string, Connection>();
  private readonly owners = new Map<number, number>();
  private readonly pending = new Map<string, PendingRequest>();
  /** Events whose audience is watched by `sendWatched`: the connections that still hold them. */
  private readonly watches = new Set<Watch>();
  /** Runs that were cancelled, with the reason, oldest first (at most `MAX_CANCELLED_RUNS`). */
  private readonly cancelledRuns = new Map<string, string>();

  constructor(options: LocalToolSessionRegistryOptions = {}) {
    this.now = options.now ?? Date.now;
    this.newId = options.newId ?? randomUUID;
  }

  /**
   * Registers an open client connection of `userId`. Reusing a connection id replaces the old
   * connection as if it had been removed first, so requests delivered only to it fail.
   */
  addConnection(connectionId: string, userId: number, send: ClientEventSink): void {
    if (this.connections.has(connectionId)) this.removeConnection(connectionId);
    this.connections.set(connectionId, { userId, send });
  }

  /**
   * Forgets a closed connection. Every pending request whose delivered-to connections are now all
   * gone rejects with `LocalClientDisconnectedError`: nobody is left who could answer it.
   */
  removeConnection(connectionId: string): void {
    if (!this.connections.delete(connectionId)) return;
    for (const [requestId, request] of this.pending) {
      if (!request.deliveredTo.delete(connectionId) || request.deliveredTo.size > 0) continue;
      this.pending.delete(requestId);
      request.reject(new LocalClientDisconnectedError(requestId, request.toolName));
    }
    for (const watch of [...this.watches]) {
      if (!watch.connections.delete(connectionId) || watch.connections.size > 0) continue;
      this.watches.delete(watch);
      watch.onGone();
    }
  }

  /** Records the owner of a session; later calls replace the owner. */
  bindSession(sessionId: number, ownerUserId: number): void {
    this.owners.set(sessionId, ownerUserId);
  }

  /** The user who owns the session, or `undefined` if it was never bound. */
  ownerOf(sessionId: number): number | undefined {
    return this.owners.get(sessionId);
  }

  /** Whether the session's owner has at least one open connection. */
  hasConnection(sessionId: number): boolean {
    return this.ownerConnections(sessionId).length > 0;
  }

  /**
   * Sends an event to every connection of the session owner. A sink that throws counts as not
   * delivered. Returns how many connections accepted the event.
   */
  sendToSession(sessionId: number, type: string, data: Record<string, unknown>): number {
    return this.deliver(sessionId, type, data).length;
  }

  /**
   * Sends an event like `sendToSession` and calls `onGone` once every connection that accepted it
   * has closed — nobody is left who could answer it. Nothing is watched when no connection
   * accepted the event; call `release` once the answer has come.
   */
  sendWatched(sessionId: number, type: string, data: Record<string, unknown>, onGone: () => void): WatchedDelivery {
    const delivered = this.deliver(sessionId, type, data);
    // A connection may have closed from inside `send`; only open ones can still answer.
    const open = delivered.filter((connectionId) => this.connections.has(connectionId));
    const watch: Watch = { connections: new Set(open), onGone };
    if (open.length > 0) this.watches.add(watch);
    else if (delivered.length > 0) onGone();
    return { delivered: delivered.length, release: () => void this.watches.delete(watch) };
  }

  /**
   * Sends a `tool_request` to the session owner's connections and returns a promise for the raw
   * result string of the first `tool_response`. The promise rejects with
   * `LocalClientDisconnectedError` when every receiving connection closes, or with the error given
   * to `failRequest`. Throws `NoConnectedClientError` when no connection accepted the request, and
   * `LocalRunCancelledError`, sending nothing, when the run it is made in was cancelled (`cancelRun`).
   */
  sendToolRequest(sessionId: number, request: LocalToolRequest): { requestId: string; promise: Promise<string> } {
    const executionId = ExecutionScope.currentExecutionId();
    const cancelledBecause = executionId === undefined ? undefined : this.cancelledRuns.get(executionId);
    if (cancelledBecause !== undefined) throw new LocalRunCancelledError(sessionId, cancelledBecause);
    const requestId = this.newId();
    let resolve!: (result: string) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<string>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // A caller that drops the promise must not turn a disconnection into an unhandled rejection.
    promise.catch(() => undefined);
    const entry: PendingRequest = {
      sessionId,
      toolName: request.toolName,
      executionId,
      deliveredTo: new Set(),
      resolve,
      reject,
    };
    // Registered before sending: a client may answer from inside `send`.
    this.pending.set(requestId, entry);
    const delivered = this.deliver(sessionId, 'tool_request', {
      requestId,
      toolName: request.toolName,
      arguments: request.argumentsJson,
      workspace: request.workspace,
      needApproval: request.needApproval,
      dangerReason: request.dangerReason,
    });
    if (delivered.length === 0 && this.pending.delete(requestId)) throw new NoConnectedClientError(sessionId);
    // A connection may have closed from inside `send`; only open ones can still answer.
    for (const connectionId of delivered) {
      if (this.connections.has(connectionId)) entry.deliveredTo.add(connectionId);
    }
    if (entry.deliveredTo.size === 0 && this.pending.delete(requestId)) {
      reject(new LocalClientDisconnectedError(requestId, request.toolName));
    }
    return { requestId, promise };
  }

  /**
   * Resolves a pending request with the client's raw result. Returns `false` and changes nothing
   * when the request is unknown (already finished, timed out, never existed) or `userId` is not
   * the owner of the request's session. Given the answering `connectionId`, the other
   * connections that received the request get `tool_request_cancelled` (reason `answered by
   * another client`), so that a second window of the user stops showing its approval prompt.
   */
  completeRequest(requestId: string, result: string, userId: number, connectionId?: string): boolean {
    const request = this.pending.get(requestId);
    if (!request || this.owners.get(request.sessionId) !== userId) return false;
    this.pending.delete(requestId);
    request.resolve(result);
    if (connectionId !== undefined) {
      request.deliveredTo.delete(connectionId);
      this.announceWithdrawn(requestId, request, ANSWERED_ELSEWHERE);
    }
    return true;
  }

  /**
   * Rejects a pending request: with `reason` itself when it is an `Error`, else with
   * `new Error(reason)`. The connections that received the request get `tool_request_cancelled`
   * (`{requestId, reason}`), so a desktop stops asking its user to approve a call nobody waits for.
   * Returns `false` if the request is not pending.
   */
  failRequest(requestId: string, reason: string | Error): boolean {
    const request = this.pending.get(requestId);
    if (!request) return false;
    this.abandon(requestId, request, typeof reason === 'string' ? new Error(reason) : reason);
    return true;
  }

  /** Fails every pending request of the session (e.g. the run was cancelled); returns their ids. */
  failSession(sessionId: number, reason: string): string[] {
    const failed: string[] = [];
    for (const [requestId, request] of this.pending) {
      if (request.sessionId !== sessionId) continue;
      this.abandon(requestId, request, new Error(reason));
      failed.push(requestId);
    }
    return failed;
  }

  /**
   * The session's run `executionId` was cancelled: fails the session's pending requests like
   * `failSession`, and refuses every later request made inside that run. A call of the cancelled
   * run that was still being prepared (its approval being assessed, say) then never reaches the
   * desktop, even when the next run of the session has already started.
   */
  cancelRun(sessionId: number, executionId: string | undefined, reason: string): string[] {
    if (executionId !== undefined) {
      this.cancelledRuns.delete(executionId);
      this.cancelledRuns.set(executionId, reason);
      // Only a run's calls still in flight can use an entry; the oldest are long finished.
      if (this.cancelledRuns.size > MAX_CANCELLED_RUNS) this.cancelledRuns.delete(this.cancelledRuns.keys().next().value as string);
    }
    return this.failSession(sessionId, reason);
  }

  /** How many tool requests wait for an answer. */
  pendingCount(): number {
    return this.pending.size;
  }

  /** The session of a pending request, or `undefined` if it is not pending. */
  sessionOfRequest(requestId: string): number | undefined {
    return this.pending.get(requestId)?.sessionId;
  }

  private abandon(requestId: string, request: PendingRequest, error: Error): void {
    this.pending.delete(requestId);
    request.reject(error);
    this.announceWithdrawn(requestId, request, error.message);
  }

  /** Sends `tool_request_cancelled` to the connections that received the request. */
  private announceWithdrawn(requestId: string, request: PendingRequest, reason: string): void {
    if (request.deliveredTo.size === 0) return;
    const event: ClientEvent = {
      type: 'tool_request_cancelled',
      sessionId: request.sessionId,
      data: request.executionId === undefined ? { requestId, reason } : { requestId, reason, executionId: request.executionId },
      timestamp: this.now(),
    };
    for (const connectionId of request.deliveredTo) {
      try {
        this.connections.get(connectionId)?.send(event);
      } catch {
        // The connection is failing; it will be removed when it closes.
      }
    }
  }

  private ownerConnections(sessionId: number): Array<[string, Connection]> {
    const owner = this.owners.get(sessionId);
    if (owner === undefined) return [];
    return [...this.connections].filter(([, connection]) => connection.userId === owner);
  }

  /** Returns the ids of the connections that accepted the event. */
  private deliver(sessionId: number, type: string, data: Record<string, unknown>): string[] {
    const executionId = ExecutionScope.currentExecutionId();
    const payload = executionId === undefined || 'executionId' in data ? data : { ...data, executionId };
    const event: ClientEvent = { type, sessionId, data: payload, timestamp: this.now() };
    const accepted: string[] = [];
    for (const [connectionId, connection] of this.ownerConnections(sessionId)) {
      try {
        connection.send(event);
        accepted.push(connectionId);
      } catch {
        // A failing socket must not stop delivery to the user's other connections.
      }
    }
    return accepted;
  }
}
