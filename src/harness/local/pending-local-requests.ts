import { randomUUID } from 'node:crypto';
import type { ClientConnection } from './client-connections';
import type { ClientEvent } from './client-event';
import { LocalClientDisconnectedError } from './local-errors';

/** The reason `tool_request_cancelled` gives the user's other connections once one has answered. */
export const ANSWERED_ELSEWHERE = 'answered by another client';

export interface PendingLocalRequestsOptions {
  /** Clock for event timestamps (default `Date.now`). */
  now?: () => number;
  /** Request id generator (default `crypto.randomUUID`). */
  newId?: () => string;
}

interface PendingRequest {
  sessionId: number;
  toolName: string;
  /** The run that sent the request, when it was sent inside one. */
  executionId: string | undefined;
  /** Connections that took the request and could still answer it. */
  heldBy: Map<string, ClientConnection>;
  resolve: (result: string) => void;
  reject: (error: Error) => void;
}

/**
 * LOCAL tool requests sent to a desktop and waiting for its answer: each is a promise for the raw
 * result, held by the connections that received it. A request that ends unanswered is withdrawn
 * from them with `tool_request_cancelled`, so a desktop stops asking its user to approve a call
 * nobody waits for.
 */
export class PendingLocalRequests {
  private readonly now: () => number;
  private readonly newId: () => string;
  private readonly pending = new Map<string, PendingRequest>();

  constructor(options: PendingLocalRequestsOptions = {}) {
    this.now = options.now ?? Date.now;
    this.newId = options.newId ?? randomUUID;
  }

  /**
   * Opens a request under a new id, held by nobody yet (call `holdBy` once it was sent). Its
   * promise never counts as an unhandled rejection: a caller may drop it.
   */
  open(request: { sessionId: number; toolName: string; executionId: string | undefined }): { requestId: string; promise: Promise<string> } {
    const requestId = this.newId();
    let resolve!: (result: string) => void;
    let reject!: (error: Error) => void;
    const promise = new Promise<string>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => undefined);
    this.pending.set(requestId, { ...request, heldBy: new Map(), resolve, reject });
    return { requestId, promise };
  }

  /**
   * Records the open connections that took the request. A request that none holds fails with
   * `LocalClientDisconnectedError`: nobody is left who could answer it.
   */
  holdBy(requestId: string, connections: ClientConnection[]): void {
    const request = this.pending.get(requestId);
    if (!request) return;
    for (const connection of connections) request.heldBy.set(connection.id, connection);
    if (request.heldBy.size > 0) return;
    this.pending.delete(requestId);
    request.reject(new LocalClientDisconnectedError(requestId, request.toolName));
  }

  /** Forgets a request that reached nobody, leaving its promise unsettled; `false` if it is not pending. */
  discard(requestId: string): boolean {
    return this.pending.delete(requestId);
  }

  /** The session of a pending request, or `undefined` if it is not pending. */
  sessionOf(requestId: string): number | undefined {
    return this.pending.get(requestId)?.sessionId;
  }

  /** How many requests wait for an answer. */
  count(): number {
    return this.pending.size;
  }

  /**
   * Resolves a pending request with the raw result; `false` if it is not pending. Given the
   * answering connection, the others that hold the request get `tool_request_cancelled`
   * (`answered by another client`).
   */
  complete(requestId: string, result: string, answeredBy?: string): boolean {
    const request = this.pending.get(requestId);
    if (!request) return false;
    this.pending.delete(requestId);
    request.resolve(result);
    if (answeredBy !== undefined) {
      request.heldBy.delete(answeredBy);
      this.withdraw(requestId, request, ANSWERED_ELSEWHERE);
    }
    return true;
  }

  /** Rejects a pending request with `error` and withdraws it; `false` if it is not pending. */
  fail(requestId: string, error: Error): boolean {
    const request = this.pending.get(requestId);
    if (!request) return false;
    this.abandon(requestId, request, error);
    return true;
  }

  /** Fails every pending request of the session with `new Error(reason)`; returns their ids. */
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
   * A connection closed: every request it was the last holder of rejects with
   * `LocalClientDisconnectedError`.
   */
  connectionClosed(connectionId: string): void {
    for (const [requestId, request] of this.pending) {
      if (!request.heldBy.delete(connectionId) || request.heldBy.size > 0) continue;
      this.pending.delete(requestId);
      request.reject(new LocalClientDisconnectedError(requestId, request.toolName));
    }
  }

  private abandon(requestId: string, request: PendingRequest, error: Error): void {
    this.pending.delete(requestId);
    request.reject(error);
    this.withdraw(requestId, request, error.message);
  }

  /** Sends `tool_request_cancelled` to the connections that hold the request. */
  private withdraw(requestId: string, request: PendingRequest, reason: string): void {
    if (request.heldBy.size === 0) return;
    const event: ClientEvent = {
      type: 'tool_request_cancelled',
      sessionId: request.sessionId,
      data: request.executionId === undefined ? { requestId, reason } : { requestId, reason, executionId: request.executionId },
      timestamp: this.now(),
    };
    // A connection that does not take it is failing; it will be announced closed.
    for (const connection of request.heldBy.values()) connection.send(event);
  }
}
