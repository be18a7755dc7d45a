import { findForbiddenKey, findJsonLimitViolation } from '../http/json-body-limits';

/** Largest client frame the server reads (a LOCAL tool's output travels in one); larger ones close the connection with 1009. */
export const MAX_CLIENT_FRAME_BYTES = 16 * 1024 * 1024;

/** The client → server frame types of interface.md. */
export const CLIENT_FRAME_TYPES = ['tool_response', 'ask_user_answer', 'approval_response', 'cancel', 'subscribe', 'unsubscribe'] as const;
export type ClientFrameType = (typeof CLIENT_FRAME_TYPES)[number];

/** The pseudo-event a frame we cannot use is routed to; it carries the problem. */
export const INVALID_FRAME = 'invalid_frame';

export interface ParsedFrame {
  event: ClientFrameType | typeof INVALID_FRAME;
  data: Record<string, unknown>;
}

/**
 * Reads one WebSocket frame into the `{event, data}` form the Nest ws adapter routes on.
 * Anything unusable becomes an `invalid_frame` event whose `data.message` names the problem.
 */
export function parseClientFrame(raw: unknown): ParsedFrame {
  const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(typeof raw === 'string' ? raw : String(raw), 'utf8');
  // Measured before it is parsed, as request bodies are: a frame of 100,000 keys or nested
  // 10,000 deep must not hold the server for everyone.
  const violation = findJsonLimitViolation(bytes);
  if (violation) return invalid(`Frame refused: ${violation.message}`);
  let frame: unknown;
  try {
    frame = JSON.parse(bytes.toString('utf8'));
  } catch {
    return invalid('Frame is not valid JSON');
  }
  const forbidden = findForbiddenKey(frame);
  if (forbidden) return invalid(`Frame refused: key '${forbidden.key}' is not allowed`);
  if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) {
    return invalid('Frame must be a JSON object');
  }
  const type = (frame as { type?: unknown }).type;
  if (typeof type !== 'string') return invalid("Frame has no string field 'type'");
  if (!(CLIENT_FRAME_TYPES as readonly string[]).includes(type)) return invalid(`Unknown frame type '${type}'`);
  return { event: type as ClientFrameType, data: frame as Record<string, unknown> };
}

function invalid(message: string): ParsedFrame {
  return { event: INVALID_FRAME, data: { message } };
}

/** Reads a required field of a frame, or says which one is missing or of the wrong type. */
export function requireField<T extends 'string' | 'integer'>(
  frame: Record<string, unknown>,
  field: string,
  kind: T,
): { ok: true; value: T extends 'string' ? string : number } | { ok: false; message: string } {
  const value = frame[field];
  const matches = kind === 'string' ? typeof value === 'string' : Number.isSafeInteger(value);
  if (!matches) {
    const type = (frame as { type?: unknown }).type;
    return { ok: false, message: `${String(type)} frame needs field '${field}' (${kind === 'string' ? 'a string' : 'an integer'})` };
  }
  return { ok: true, value: value as T extends 'string' ? string : number };
}

/**
 * Reads an optional field that must be a non-negative integer (a `seq`): `undefined` when the
 * frame does not have it, else the value or what is wrong with it.
 */
export function optionalSeq(frame: Record<string, unknown>, field: string): { ok: true; value: number | undefined } | { ok: false; message: string } {
  const value = frame[field];
  if (value === undefined) return { ok: true, value: undefined };
  if (Number.isSafeInteger(value) && (value as number) >= 0) return { ok: true, value: value as number };
  return { ok: false, message: `${String(frame.type)} frame field '${field}' must be a non-negative integer` };
}
