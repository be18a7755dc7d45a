import { errorMessage } from '../runtime/error-message';

/**
 * Parsing of a tool call's `argumentsJson` and typed readers for its fields. Every failure is a
 * value carrying a message that names the problem, so a tool can hand it straight back to the
 * model instead of throwing.
 */

/** Outcome of reading something from a model's arguments: the value, or why it is unusable. */
export type ArgumentResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** Outcome of `parseToolArguments`. */
export type ParsedToolArguments = { ok: true; args: Record<string, unknown> } | { ok: false; error: string };

/**
 * Parses the JSON a model sent as a tool's arguments. An empty (or blank) string means "no
 * arguments" and gives `{}`, because some providers send that for argument-less calls.
 */
export function parseToolArguments(argumentsJson: string): ParsedToolArguments {
  if (typeof argumentsJson !== 'string') {
    return { ok: false, error: `arguments must be a JSON object string, got ${describeType(argumentsJson)}` };
  }
  if (argumentsJson.trim() === '') return { ok: true, args: {} };
  let value: unknown;
  try {
    value = JSON.parse(argumentsJson);
  } catch (error) {
    const reason = errorMessage(error);
    return { ok: false, error: `arguments are not valid JSON: ${reason}` };
  }
  if (!isPlainObject(value)) {
    return { ok: false, error: `arguments must be a JSON object, got ${describeType(value)}` };
  }
  return { ok: true, args: value };
}

/** A string field that must be present. Empty strings are refused unless `allowEmpty` is set. */
export function requireString(
  args: Record<string, unknown>,
  field: string,
  options: { allowEmpty?: boolean } = {},
): ArgumentResult<string> {
  const value = own(args, field);
  if (value === undefined || value === null) return { ok: false, error: `missing required field '${field}'` };
  if (typeof value !== 'string') return { ok: false, error: `'${field}' must be a string, got ${describeType(value)}` };
  if (value === '' && !options.allowEmpty) return { ok: false, error: `'${field}' must not be empty` };
  return { ok: true, value };
}

/** A string field that may be absent (`undefined` or `null`); when present it must be a string. */
export function optionalString(args: Record<string, unknown>, field: string): ArgumentResult<string | undefined> {
  const value = own(args, field);
  if (value === undefined || value === null) return { ok: true, value: undefined };
  if (typeof value !== 'string') return { ok: false, error: `'${field}' must be a string, got ${describeType(value)}` };
  return { ok: true, value };
}

/** An integer field that may be absent; when present it must be a whole number `>= min`. */
export function optionalInteger(
  args: Record<string, unknown>,
  field: string,
  options: { min?: number } = {},
): ArgumentResult<number | undefined> {
  const value = own(args, field);
  if (value === undefined || value === null) return { ok: true, value: undefined };
  return checkInteger(value, field, options.min);
}

/** An integer field that must be present and `>= min`. */
export function requireInteger(
  args: Record<string, unknown>,
  field: string,
  options: { min?: number } = {},
): ArgumentResult<number> {
  const value = own(args, field);
  if (value === undefined || value === null) return { ok: false, error: `missing required field '${field}'` };
  return checkInteger(value, field, options.min);
}

/** A boolean field that may be absent; when present it must be `true` or `false`. */
export function optionalBoolean(args: Record<string, unknown>, field: string): ArgumentResult<boolean | undefined> {
  const value = own(args, field);
  if (value === undefined || value === null) return { ok: true, value: undefined };
  if (typeof value !== 'boolean') return { ok: false, error: `'${field}' must be a boolean, got ${describeType(value)}` };
  return { ok: true, value };
}

/** `true` for `{...}` values: not arrays, not `null`. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The JSON-ish type name of a value, for error messages ("array", "null", "number", ...). */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function checkInteger(value: unknown, field: string, min: number | undefined): ArgumentResult<number> {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    const got = typeof value === 'number' ? String(value) : describeType(value);
    return { ok: false, error: `'${field}' must be an integer, got ${got}` };
  }
  if (min !== undefined && value < min) return { ok: false, error: `'${field}' must be at least ${min}, got ${value}` };
  return { ok: true, value };
}

/** Reads only own properties, so a field named `__proto__` or `constructor` is never inherited. */
function own(args: Record<string, unknown>, field: string): unknown {
  return Object.prototype.hasOwnProperty.call(args, field) ? args[field] : undefined;
}
