import { randomUUID } from 'node:crypto';
import type { WaitStore } from '../runtime/wait-store';
import { parseToolArguments } from './tool-arguments';

/** Where approval requests go: the session owner's client connections (and the session's event log). */
export interface ApprovalChannel {
  /** Whether the session's owner has a client connection open now. */
  hasConnection(sessionId: number): boolean;
  /** Sends an event of the session to its owner's connections; returns how many took it. */
  sendToSession(sessionId: number, type: string, data: Record<string, unknown>): number;
}

/** One call waiting for its owner's approval. */
export interface PendingApproval {
  requestId: string;
  sessionId: number;
  /** The only user whose answer counts. */
  ownerUserId: number;
  toolCallId: string;
  toolName: string;
  /** The arguments exactly as the model wrote them: what an approval approves. */
  argumentsJson: string;
  reason: string;
  /** The run the call belongs to, when known: its events carry it, whoever settles the request. */
  executionId?: string;
  /** Milliseconds since the epoch. */
  createdAt: number;
  expiresAt: number;
}

/** How a request ended. */
export type ApprovalOutcome = 'approved' | 'denied' | 'expired' | 'withdrawn' | 'undelivered';

/** What the dispatcher learns from a request. */
export interface ApprovalAnswer {
  outcome: ApprovalOutcome;
  /** The person's message with an approval or a denial, or why the request ended otherwise. */
  message?: string;
}

/** An `approval_response` frame as the gateway read it. */
export interface ApprovalResponse {
  userId: number;
  sessionId: number;
  requestId: string;
  approved: boolean;
  message?: string;
  /** Present when the client echoed the arguments: they must be the stored ones. */
  arguments?: unknown;
}

export interface ApprovalRequestsOptions {
  /** How long a request waits for its answer (`HARNESS_APPROVAL_TIMEOUT_MS`, default 10 minutes). */
  timeoutMs?: number;
  now?: () => number;
  newId?: () => string;
  /** Where each request is kept while it waits, so that it outlives the process (requests made in a run). */
  waits?: WaitStore | null;
}

interface Entry {
  request: PendingApproval;
  settle: (answer: ApprovalAnswer) => void;
}

export const DEFAULT_APPROVAL_TIMEOUT_MS = 10 * 60_000;

/**
 * CLOUD approvals: a call the policy asks about is offered to the session owner's clients as an
 * `approval_request`, and waits for one `approval_response`, its deadline, or its run's
 * cancellation. The stored request is the reference every answer is checked against (owner,
 * session, request id, unchanged arguments): an answer approves or denies the call it names,
 * and can never change it. Each end is announced as `approval_resolved`.
 */
export class ApprovalRequests {
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly newId: () => string;
  private readonly entries = new Map<string, Entry>();
  private readonly waits: WaitStore | null;

  constructor(
    private readonly channel: ApprovalChannel,
    options: ApprovalRequestsOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    this.now = options.now ?? Date.now;
    this.newId = options.newId ?? randomUUID;
    this.waits = options.waits ?? null;
  }

  /**
   * Asks the owner and resolves with the outcome; never rejects. Nobody connected to ask means
   * `undelivered` at once. Once delivered the request waits even while its clients reconnect: a
   * client that comes back finds it in the session's event log.
   */
  request(
    call: { sessionId: number; ownerUserId: number; toolCallId: string; toolName: string; argumentsJson: string; reason: string; executionId?: string | null },
    signal?: AbortSignal,
  ): Promise<ApprovalAnswer> {
    if (signal?.aborted) return Promise.resolve({ outcome: 'withdrawn', message: 'the run was cancelled' });
    if (!this.channel.hasConnection(call.sessionId)) {
      return Promise.resolve({ outcome: 'undelivered', message: "no client of the session's owner is connected to approve it" });
    }
    const createdAt = this.now();
    const { executionId, ...asked } = call;
    const request: PendingApproval = {
      ...asked,
      ...(executionId ? { executionId } : {}),
      requestId: this.newId(),
      createdAt,
      expiresAt: createdAt + this.timeoutMs,
    };
    return new Promise<ApprovalAnswer>((resolve) => {
      const timer = setTimeout(() => settle({ outcome: 'expired', message: `no answer within ${this.timeoutMs} ms` }), this.timeoutMs);
      timer.unref();
      const onAbort = (): void => settle({ outcome: 'withdrawn', message: 'the run was cancelled' });
      const settle = (answer: ApprovalAnswer): void => {
        if (this.entries.get(request.requestId)?.request !== request) return;
        this.entries.delete(request.requestId);
        this.waits?.remove(request.requestId);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const data: Record<string, unknown> = { requestId: request.requestId, outcome: answer.outcome };
        if (answer.message !== undefined) data.message = answer.message;
        // An answer arrives outside the run's scope: the run is named here, as on the request.
        if (request.executionId !== undefined) data.executionId = request.executionId;
        this.channel.sendToSession(request.sessionId, 'approval_resolved', data);
        resolve(answer);
      };
      this.entries.set(request.requestId, { request, settle });
      signal?.addEventListener('abort', onAbort, { once: true });
      const event = approvalRequestEvent(request);
      // Kept before it is sent: a process that dies once the person has seen it still has it.
      if (executionId) {
        this.waits?.save({
          requestId: request.requestId,
          kind: 'approval',
          sessionId: request.sessionId,
          executionId,
          toolCallId: request.toolCallId,
          toolName: request.toolName,
          argumentsJson: request.argumentsJson,
          ownerUserId: request.ownerUserId,
          eventType: 'approval_request',
          eventData: event,
          createdAt: request.createdAt,
          expiresAt: request.expiresAt,
        });
      }
      const delivered = this.channel.sendToSession(request.sessionId, 'approval_request', event);
      if (delivered === 0) settle({ outcome: 'undelivered', message: "no client of the session's owner took the request" });
    });
  }

  /**
   * Applies an answer; returns `null`, or why it was refused — then nothing changed. Refused:
   * an unknown or finished request, another session's, another user's, or arguments that are
   * not the stored ones.
   */
  answer(response: ApprovalResponse): string | null {
    const entry = this.entries.get(response.requestId);
    const request = entry?.request;
    if (!entry || !request || request.sessionId !== response.sessionId || request.ownerUserId !== response.userId) {
      return `No pending approval request '${response.requestId}' for session ${response.sessionId}`;
    }
    if (response.arguments !== undefined && !sameArguments(response.arguments, request.argumentsJson)) {
      return `The answer to approval request '${response.requestId}' names other arguments than the call: an answer cannot change a call`;
    }
    entry.settle({ outcome: response.approved ? 'approved' : 'denied', message: response.message });
    return null;
  }

  /** Whether this process waits on the request (a request that outlived an earlier process does not count). */
  knows(requestId: string): boolean {
    return this.entries.has(requestId);
  }

  /** The session's waiting requests, oldest first (copies). */
  pending(sessionId: number): PendingApproval[] {
    return [...this.entries.values()].filter((entry) => entry.request.sessionId === sessionId).map((entry) => ({ ...entry.request }));
  }

  /** Ends every waiting request of the session as withdrawn; returns how many there were. */
  withdrawSession(sessionId: number, reason: string): number {
    const waiting = [...this.entries.values()].filter((entry) => entry.request.sessionId === sessionId);
    for (const entry of waiting) entry.settle({ outcome: 'withdrawn', message: reason });
    return waiting.length;
  }
}

/** The data of the `approval_request` event for a request. */
function approvalRequestEvent(request: PendingApproval): Record<string, unknown> {
  return {
    requestId: request.requestId,
    toolCallId: request.toolCallId,
    toolName: request.toolName,
    arguments: request.argumentsJson,
    reason: request.reason,
    expiresAt: new Date(request.expiresAt).toISOString(),
  };
}

/**
 * Whether echoed arguments are the stored ones: the same text, or the same JSON value (key
 * order aside).
 */
export function sameArguments(echoed: unknown, storedJson: string): boolean {
  if (typeof echoed === 'string') return echoed === storedJson || canonical(parseOrSelf(echoed)) === canonical(parseOrSelf(storedJson));
  return canonical(echoed) === canonical(parseOrSelf(storedJson));
}

function parseOrSelf(text: string): unknown {
  const parsed = parseToolArguments(text);
  return parsed.ok ? parsed.args : text;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}
