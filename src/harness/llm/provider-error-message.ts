import { isRecord } from './json-guards';
import { truncate } from './llm-errors';

/** Pulls a human message out of a provider's error body: `error.message`, `message`, or the text. */
export function extractProviderMessage(text: string): string | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  try {
    const body: unknown = JSON.parse(trimmed);
    if (isRecord(body)) {
      const error = body.error;
      if (isRecord(error) && typeof error.message === 'string' && error.message) return error.message;
      if (typeof error === 'string' && error) return error;
      if (typeof body.message === 'string' && body.message) return body.message;
      if (typeof body.detail === 'string' && body.detail) return body.detail;
    }
  } catch {
    // not JSON: the raw text is the best explanation there is
  }
  return truncate(trimmed, 500);
}

/** A provider error object or string as one line: its `message` if it has one. */
export function describeProviderError(error: unknown): string {
  if (isRecord(error)) {
    const message = typeof error.message === 'string' ? error.message : null;
    const type = typeof error.type === 'string' ? error.type : typeof error.code === 'string' ? error.code : null;
    if (message && type) return `${type} — ${message}`;
    if (message) return message;
  }
  return typeof error === 'string' ? error : JSON.stringify(error);
}
