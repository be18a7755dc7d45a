/** Why a request stopped waiting for its answer. */
export type McpRequestStopReason = 'cancelled' | 'timeout' | 'max-total-timeout';

const STOP_MESSAGES: Record<McpRequestStopReason, string> = {
  cancelled: 'the request was cancelled',
  timeout: 'the request ran past its timeout',
  'max-total-timeout': 'the request ran past its maximum total time',
};

/**
 * A request stopped waiting before its answer came: its caller cancelled it, or one of its
 * deadlines passed. Distinct from transport errors, so that a slow server is not taken for a
 * dead connection.
 */
export class McpRequestStoppedError extends Error {
  override readonly name = 'McpRequestStoppedError';
  constructor(
    readonly reason: McpRequestStopReason,
    /** For `cancelled`: the reason of the caller's signal. */
    readonly callerReason?: unknown,
  ) {
    super(STOP_MESSAGES[reason]);
  }
}

/** When a request stops waiting. */
export interface McpRequestDeadline {
  /** How long the request may go without its answer; `progress` starts this again. */
  timeoutMs: number;
  /** The longest it may take in all, whatever progress it reports (no cap when absent). */
  maxTotalTimeoutMs?: number;
  /** The caller's cancellation. */
  signal?: AbortSignal;
}

/** What a request started under a deadline gets. */
export interface McpRequestControl {
  /** Aborted when the request stops waiting: hand it to the SDK, which then cancels the request on the server. */
  signal: AbortSignal;
  /** The server reported progress: the request's timeout starts again. */
  progress(): void;
}

/**
 * Runs `start` and rejects with an `McpRequestStoppedError` as soon as the caller cancels or a
 * deadline passes, whatever the transport does — a request never hangs on a silent server or a
 * lost connection. The signal given to `start` is aborted then (with the same error as reason),
 * so the SDK sends `notifications/cancelled` and forgets the request.
 *
 * The harness keeps the deadlines itself rather than leaving them to the SDK's `timeout`,
 * `resetTimeoutOnProgress` and `maxTotalTimeout`: the SDK checks its total only when a progress
 * notification arrives, and one place deciding gives one message per cause.
 */
export async function withRequestDeadline<T>(
  deadline: McpRequestDeadline,
  start: (control: McpRequestControl) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  let rejectStopped: (error: McpRequestStoppedError) => void = () => undefined;
  const stopped = new Promise<never>((_, reject) => {
    rejectStopped = reject;
  });
  const stop = (error: McpRequestStoppedError): void => {
    if (controller.signal.aborted) return;
    controller.abort(error);
    rejectStopped(error);
  };
  const timer = (ms: number, reason: McpRequestStopReason): NodeJS.Timeout => {
    const handle = setTimeout(() => stop(new McpRequestStoppedError(reason)), ms);
    // A deadline is no reason to keep the process alive.
    handle.unref();
    return handle;
  };
  const callerSignal = deadline.signal;
  const onCancel = (): void => stop(new McpRequestStoppedError('cancelled', callerSignal?.reason));
  if (callerSignal?.aborted) throw new McpRequestStoppedError('cancelled', callerSignal.reason);
  callerSignal?.addEventListener('abort', onCancel, { once: true });

  let idle = timer(deadline.timeoutMs, 'timeout');
  const total = deadline.maxTotalTimeoutMs === undefined ? undefined : timer(deadline.maxTotalTimeoutMs, 'max-total-timeout');
  let ended = false;
  const control: McpRequestControl = {
    signal: controller.signal,
    progress: () => {
      // A late report must not start a timer for a request that is over.
      if (ended || controller.signal.aborted) return;
      clearTimeout(idle);
      idle = timer(deadline.timeoutMs, 'timeout');
    },
  };
  try {
    return await Promise.race([start(control), stopped]);
  } finally {
    ended = true;
    clearTimeout(idle);
    clearTimeout(total);
    callerSignal?.removeEventListener('abort', onCancel);
  }
}
