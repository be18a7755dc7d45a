/** A sleep that the signal cuts short, rejecting with the signal's reason. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    timer.unref?.();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Throws the signal's reason if it has fired. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

/** What a fired signal rejects with: its reason, or an `AbortError` when it was aborted without one. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** A `catch` handler that answers `fallback` for any failure but the caller's abort. */
export function whenNotAborted<T>(signal: AbortSignal | undefined, fallback: T): (error: unknown) => T {
  return () => {
    throwIfAborted(signal);
    return fallback;
  };
}
