import { AudienceWatches } from './audience-watches';
import { CancelledRuns } from './cancelled-runs';
import type { ClientConnections } from './client-connections';
import type { ClientEventSink } from './client-event';
import { NO_EXECUTION, type ExecutionIdSource } from './execution-id-source';
import { LocalConnections } from './local-connections';
import { ConnectionsManagedElsewhereError, LocalRunCancelledError, NoConnectedClientError } from './local-errors';
import { PendingLocalRequests } from './pending-local-requests';
import { SessionAudience } from './session-audience';
import { SessionOwners } from './session-owners';

export { ANSWERED_ELSEWHERE } from './pending-local-requests';

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
  /**
   * The open client connections (in the server: the WebSocket registry, so that every socket is
   * registered once). Without it the registry keeps its own, fed by `addConnection` and
   * `removeConnection`.
   */
  clients?: ClientConnections;
  /**
   * Which run the calling code belongs to (in the server: the execution scope). Events are
   * stamped with it and a cancelled run's requests refused. Default: every call is outside a run.
   */
  executions?: ExecutionIdSource;
}

/** What `sendWatched` returns. */
export interface WatchedDelivery {
  /** How many connections accepted the event. */
  delivered: number;
  /** Stops watching (the event was answered or withdrawn); `onGone` will not be called. */
  release(): void;
}

/**
 * The LOCAL side of a session, for the dispatcher, the executor, the WebSocket gateway and the
 * run service: which user owns which session, the events sent to the owner's connections, the
 * tool requests waiting for a desktop's answer, the events whose receivers are watched and the
 * runs that were cancelled. Each of those is its own class; this one composes them and keeps the
 * rules that tie them together.
 *
 * Events for a session go to every open connection of the session's owner (the user may have the
 * desktop app open twice); the first answer from that user wins.
 */
export class LocalToolSessionRegistry {
  private readonly executions: ExecutionIdSource;
  private readonly clients: ClientConnections;
  /** The connections this registry keeps itself, when it was given none. */
  private readonly ownConnections: LocalConnections | null;
  private readonly owners = new SessionOwners();
  private readonly audience: SessionAudience;
  private readonly pending: PendingLocalRequests;
  private readonly watches = new AudienceWatches();
  private readonly cancelledRuns = new CancelledRuns();

  constructor(options: LocalToolSessionRegistryOptions = {}) {
    const now = options.now ?? Date.now;
    this.executions = options.executions ?? NO_EXECUTION;
    this.ownConnections = options.clients ? null : new LocalConnections();
    this.clients = options.clients ?? (this.ownConnections as LocalConnections);
    this.audience = new SessionAudience(this.owners, this.clients, now);
    this.pending = new PendingLocalRequests({ now, newId: options.newId });
    this.clients.onConnectionClosed((connectionId) => {
      this.pending.connectionClosed(connectionId);
      this.watches.connectionClosed(connectionId);
    });
  }

  /**
   * Registers an open client connection of `userId`, for a registry that keeps its own
   * connections (throws `ConnectionsManagedElsewhereError` otherwise). Reusing a connection id
   * replaces the old connection as if it had been removed first, so requests delivered only to it
   * fail.
   */
  addConnection(connectionId: string, userId: number, send: ClientEventSink): void {
    this.requireOwnConnections(connectionId).add(connectionId, userId, send);
  }

  /**
   * Forgets a closed connection of a registry that keeps its own connections. Every pending
   * request whose receiving connections are now all gone rejects with
   * `LocalClientDisconnectedError`: nobody is left who could answer it.
   */
  removeConnection(connectionId: string): void {
    this.requireOwnConnections(connectionId).remove(connectionId);
  }

  /** Whether this registry's connections are `clients` (and not its own or another source's). */
  isBuiltOn(clients: ClientConnections): boolean {
    return this.clients === clients;
  }

  /** Records the owner of a session; later calls replace the owner. */
  bindSession(sessionId: number, ownerUserId: number): void {
    this.owners.bind(sessionId, ownerUserId);
  }

  /** The user who owns the session, or `undefined` if it was never bound. */
  ownerOf(sessionId: number): number | undefined {
    return this.owners.ownerOf(sessionId);
  }

  /** Whether the session's owner has at least one open connection. */
  hasConnection(sessionId: number): boolean {
    return this.audience.hasConnection(sessionId);
  }

  /**
   * Sends an event to every connection of the session owner. A connection that does not take it
   * counts as not delivered. Returns how many connections accepted the event.
   */
  sendToSession(sessionId: number, type: string, data: Record<string, unknown>): number {
    return this.audience.send(sessionId, type, data, this.executions.currentExecutionId()).accepted.length;
  }

  /**
   * Sends an event like `sendToSession` and calls `onGone` once every connection that accepted it
   * has closed — nobody is left who could answer it. Nothing is watched when no connection
   * accepted the event; call `release` once the answer has come.
   */
  sendWatched(sessionId: number, type: string, data: Record<string, unknown>, onGone: () => void): WatchedDelivery {
    const { accepted, open } = this.audience.send(sessionId, type, data, this.executions.currentExecutionId());
    if (open.length > 0) {
      return { delivered: accepted.length, release: this.watches.watch(open.map((connection) => connection.id), onGone) };
    }
    if (accepted.length > 0) onGone();
    return { delivered: accepted.length, release: () => undefined };
  }

  /**
   * Sends a `tool_request` to the session owner's connections and returns a promise for the raw
   * result string of the first `tool_response`. The promise rejects with
   * `LocalClientDisconnectedError` when every receiving connection closes, or with the error given
   * to `failRequest`. Throws `NoConnectedClientError` when no connection accepted the request, and
   * `LocalRunCancelledError`, sending nothing, when the run it is made in was cancelled (`cancelRun`).
   */
  sendToolRequest(sessionId: number, request: LocalToolRequest): { requestId: string; promise: Promise<string> } {
    const executionId = this.executions.currentExecutionId();
    const cancelledBecause = executionId === undefined ? undefined : this.cancelledRuns.reasonFor(executionId);
    if (cancelledBecause !== undefined) throw new LocalRunCancelledError(sessionId, cancelledBecause);
    // Opened before sending: a client may answer from inside `send`.
    const { requestId, promise } = this.pending.open({ sessionId, toolName: request.toolName, executionId });
    const { accepted, open } = this.audience.send(
      sessionId,
      'tool_request',
      {
        requestId,
        toolName: request.toolName,
        arguments: request.argumentsJson,
        workspace: request.workspace,
        needApproval: request.needApproval,
        dangerReason: request.dangerReason,
      },
      executionId,
    );
    if (accepted.length === 0 && this.pending.discard(requestId)) throw new NoConnectedClientError(sessionId);
    this.pending.holdBy(requestId, open);
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
    const sessionId = this.pending.sessionOf(requestId);
    if (sessionId === undefined || this.owners.ownerOf(sessionId) !== userId) return false;
    return this.pending.complete(requestId, result, connectionId);
  }

  /**
   * Rejects a pending request: with `reason` itself when it is an `Error`, else with
   * `new Error(reason)`. The connections that received the request get `tool_request_cancelled`
   * (`{requestId, reason}`), so a desktop stops asking its user to approve a call nobody waits for.
   * Returns `false` if the request is not pending.
   */
  failRequest(requestId: string, reason: string | Error): boolean {
    return this.pending.fail(requestId, typeof reason === 'string' ? new Error(reason) : reason);
  }

  /** Fails every pending request of the session (e.g. the run was cancelled); returns their ids. */
  failSession(sessionId: number, reason: string): string[] {
    return this.pending.failSession(sessionId, reason);
  }

  /**
   * The session's run `executionId` was cancelled: fails the session's pending requests like
   * `failSession`, and refuses every later request made inside that run. A call of the cancelled
   * run that was still being prepared (its approval being assessed, say) then never reaches the
   * desktop, even when the next run of the session has already started.
   */
  cancelRun(sessionId: number, executionId: string | undefined, reason: string): string[] {
    if (executionId !== undefined) this.cancelledRuns.add(executionId, reason);
    return this.pending.failSession(sessionId, reason);
  }

  /** How many tool requests wait for an answer. */
  pendingCount(): number {
    return this.pending.count();
  }

  /** The session of a pending request, or `undefined` if it is not pending. */
  sessionOfRequest(requestId: string): number | undefined {
    return this.pending.sessionOf(requestId);
  }

  private requireOwnConnections(connectionId: string): LocalConnections {
    if (!this.ownConnections) throw new ConnectionsManagedElsewhereError(connectionId);
    return this.ownConnections;
  }
}
