import type { ApprovalRegistry } from './approval-registry';
import { LocalToolTimeoutError } from './local-errors';
import type { LocalToolSessionRegistry } from './local-tool-session-registry';
import { errorMessage } from '../runtime/error-message';
import type { WaitStore } from '../runtime/wait-store';

export interface LocalToolExecutorOptions {
  /** How long to wait for the desktop's answer, approval time included (default 5 minutes). */
  timeoutMs?: number;
  /** Where each request is kept while it waits, so that it outlives the process (requests made in a run). */
  waits?: WaitStore | null;
  now?: () => number;
}

/** The call a request is made for, when it is made in a run: what keeping the request needs. */
export interface LocalToolCall {
  executionId: string;
  toolCallId: string;
  ownerUserId: number;
}

const DEFAULT_TIMEOUT_MS = 300_000;

/**
 * Runs a tool on the session owner's desktop client (LOCAL mode): sends a `tool_request`, waits
 * for the `tool_response`, and turns every failure into an `{"error": ...}` result so that the
 * model sees it and the run never hangs.
 */
export class LocalToolExecutor {
  private readonly timeoutMs: number;
  private readonly waits: WaitStore | null;
  private readonly now: () => number;

  constructor(
    private readonly registry: LocalToolSessionRegistry,
    private readonly approvals: ApprovalRegistry,
    options: LocalToolExecutorOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.waits = options.waits ?? null;
    this.now = options.now ?? Date.now;
  }

  /**
   * Resolves with the client's raw result string, unchanged. Never rejects: no connected client,
   * a timeout, a disconnection mid-call or a failed request each resolve with `{"error": ...}`.
   * While a request that needs approval waits, it is listed in the approval registry.
   */
  async execute(
    sessionId: number,
    toolName: string,
    argumentsJson: string,
    workspace: string | null,
    needApproval: boolean,
    dangerReason: string | null,
    call?: LocalToolCall,
  ): Promise<string> {
    let sent: { requestId: string; promise: Promise<string> };
    try {
      sent = this.registry.sendToolRequest(sessionId, { toolName, argumentsJson, workspace, needApproval, dangerReason });
    } catch (error) {
      return errorResult(error);
    }
    const { requestId, promise } = sent;
    if (needApproval) this.approvals.register(requestId, { sessionId, toolName, dangerReason });
    if (call) {
      const createdAt = this.now();
      this.waits?.save({
        requestId,
        kind: 'local_tool',
        sessionId,
        executionId: call.executionId,
        toolCallId: call.toolCallId,
        toolName,
        argumentsJson,
        ownerUserId: call.ownerUserId,
        eventType: 'tool_request',
        // As `sendToolRequest` sent it.
        eventData: { requestId, toolName, arguments: argumentsJson, workspace, needApproval, dangerReason },
        createdAt,
        expiresAt: createdAt + this.timeoutMs,
      });
    }
    const timer = setTimeout(() => {
      this.registry.failRequest(requestId, new LocalToolTimeoutError(requestId, toolName, this.timeoutMs));
    }, this.timeoutMs);
    // A forgotten request must not keep the process alive on shutdown.
    timer.unref();
    try {
      return await promise;
    } catch (error) {
      return errorResult(error);
    } finally {
      clearTimeout(timer);
      if (needApproval) this.approvals.resolve(requestId);
      if (call) this.waits?.remove(requestId);
    }
  }
}

function errorResult(error: unknown): string {
  return JSON.stringify({ error: errorMessage(error) });
}
