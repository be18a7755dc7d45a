/** Base class of every failure an LLM provider adapter reports. `provider` names the protocol. */
export class LlmError extends Error {
  override readonly name: string = 'LlmError';
  constructor(
    readonly provider: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${provider}: ${message}`, options);
  }
}

/**
 * The provider answered with an HTTP error status: a 4xx other than 429 at once, a 429 or 5xx
 * once the retries are spent. The message carries the provider's own explanation, e.g.
 * `openai: 401 Unauthorized — Invalid API key`.
 */
export class LlmHttpError extends LlmError {
  override readonly name = 'LlmHttpError';
  constructor(
    provider: string,
    readonly status: number,
    readonly statusText: string,
    /** What the provider said: `error.message`, `message`, or the raw body text; null if empty. */
    readonly providerMessage: string | null,
  ) {
    super(provider, formatHttpMessage(status, statusText, providerMessage));
  }
}

/** The provider could not be reached (connection refused, reset, DNS) after every attempt. */
export class LlmNetworkError extends LlmError {
  override readonly name: string = 'LlmNetworkError';
}

/**
 * The provider kept the caller waiting past a limit: no response headers within
 * `LLM_HEADERS_TIMEOUT_MS` (`headers`), or no byte of the body for `LLM_IDLE_TIMEOUT_MS` (`idle`).
 * A network failure like any other: retried while nothing has reached the caller.
 */
export class LlmTimeoutError extends LlmNetworkError {
  override readonly name = 'LlmTimeoutError';
  constructor(
    provider: string,
    readonly phase: 'headers' | 'idle',
    readonly timeoutMs: number,
  ) {
    super(
      provider,
      phase === 'headers'
        ? `the model sent no response headers within ${timeoutMs} ms (LLM_HEADERS_TIMEOUT_MS)`
        : `the model stream was idle for ${timeoutMs} ms (LLM_IDLE_TIMEOUT_MS)`,
    );
  }
}

/**
 * A streamed answer grew past `LLM_MAX_ANSWER_CHARS`: the adapter stopped reading and aborted the
 * request. The chunks yielded before stay yielded; the one that crossed the limit is not.
 */
export class LlmAnswerTooLargeError extends LlmError {
  override readonly name = 'LlmAnswerTooLargeError';
  constructor(
    provider: string,
    readonly maxAnswerChars: number,
  ) {
    super(provider, `the answer exceeded LLM_MAX_ANSWER_CHARS = ${maxAnswerChars} characters`);
  }
}

/**
 * The provider answered something the adapter cannot use: an `error` event in a stream, a stream
 * that broke off or ended before its terminal event, or a body that is not the protocol's shape.
 */
export class LlmResponseError extends LlmError {
  override readonly name = 'LlmResponseError';
}

/** A text cut to `max` characters, so an error message can quote what a provider sent. */
export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function formatHttpMessage(status: number, statusText: string, providerMessage: string | null): string {
  const head = statusText ? `${status} ${statusText}` : `${status}`;
  return providerMessage ? `${head} — ${providerMessage}` : head;
}
