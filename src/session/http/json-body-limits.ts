/**
 * Limits on the shape of a JSON request body, checked before anything converts or validates it.
 *
 * class-transformer (behind Nest's `ValidationPipe`) turns the parsed body into a DTO before
 * class-validator rejects unknown fields, at a cost quadratic in the number of keys, and recurses
 * once per level of nesting; and `JSON.parse` itself takes about 200 ms for 160,000 keys. So a
 * 2 MB body could hold the single Node thread for seconds and a deeply nested one overflowed the
 * stack. The request bodies of interface.md hold a handful of fields, at most two levels deep, and
 * arrays of at most 500 items (`CreateSessionDto.tools`): the limits leave ample room above that
 * and make every body cheap to parse and validate.
 */

/**
 * Largest body accepted, in bytes after decompression (body-parser's notation). A message of the
 * 1,000,000 characters `PostMessageDto` allows takes at most 6,000,000 bytes even when every
 * character is escaped as `\uXXXX`, so it fits.
 */
export const JSON_BODY_LIMIT = '8mb';

/** Deepest nesting accepted: the top-level object is level 1, an array in one of its fields level 2. */
export const MAX_JSON_DEPTH = 32;

/** Most object keys accepted in a body, counted over all its objects together. */
export const MAX_JSON_KEYS = 1_000;

/**
 * Most array items accepted in a body, counted over all its arrays together; larger than
 * {@link MAX_JSON_KEYS} because list fields (`tools`, `mcpServers`) hold many small items.
 */
export const MAX_JSON_ARRAY_ITEMS = 10_000;

/**
 * Keys refused anywhere in a body: assigned by a converter onto an object (as class-transformer
 * does), they replace its prototype or shadow its constructor.
 */
export const FORBIDDEN_JSON_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Limits on the shape of a JSON text: {@link JSON_SHAPE_LIMITS} for request bodies, smaller ones in tests. */
export interface JsonShapeLimits {
  maxDepth: number;
  maxKeys: number;
  maxArrayItems: number;
}

/** The shape limits request bodies are held to. */
export const JSON_SHAPE_LIMITS: JsonShapeLimits = {
  maxDepth: MAX_JSON_DEPTH,
  maxKeys: MAX_JSON_KEYS,
  maxArrayItems: MAX_JSON_ARRAY_ITEMS,
};

/** Which shape limit a body breaks, and a message that names it. */
export interface JsonLimitViolation {
  limit: 'depth' | 'keys' | 'arrayItems';
  message: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const SPACE = 0x20;
const TAB = 0x09;
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Measures a UTF-8 JSON text without parsing it, stopping at the first limit it breaks: one pass,
 * linear in the size, so the cost of a hostile body is the few kilobytes read until a limit is
 * reached. Strings are skipped with `indexOf` (a long message costs next to nothing); the only
 * bytes that matter outside them are ASCII, which never occur inside a multi-byte UTF-8 sequence.
 * Malformed text is measured as far as it goes and left to `JSON.parse` to report.
 */
export function findJsonLimitViolation(text: Uint8Array, limits: JsonShapeLimits = JSON_SHAPE_LIMITS): JsonLimitViolation | undefined {
  const { maxDepth, maxKeys, maxArrayItems } = limits;
  // Whether each open container is an array; a violation is reported before it outgrows this.
  const isArray = new Uint8Array(maxDepth + 1);
  let depth = 0;
  let keys = 0;
  let arrayItems = 0;
  // Just after `[`: the next token is the array's first item, unless it closes the array.
  let arrayJustOpened = false;
  for (let index = 0; index < text.length; index += 1) {
    const byte = text[index];
    if (byte === SPACE || byte === LINE_FEED || byte === CARRIAGE_RETURN || byte === TAB) continue;
    if (arrayJustOpened) {
      arrayJustOpened = false;
      if (byte !== CLOSE_ARRAY && ++arrayItems > maxArrayItems) return arrayItemsViolation(maxArrayItems);
    }
    switch (byte) {
      case QUOTE:
        index = closingQuote(text, index);
        break;
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (++depth > maxDepth) return { limit: 'depth', message: `nested deeper than ${maxDepth} levels (the depth limit)` };
        isArray[depth] = byte === OPEN_ARRAY ? 1 : 0;
        arrayJustOpened = byte === OPEN_ARRAY;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        if (depth > 0) depth -= 1;
        break;
      // Every object member has exactly one colon outside strings, every further array item one comma.
      case COLON:
        if (++keys > maxKeys) return { limit: 'keys', message: `more than ${maxKeys} object keys (the key limit)` };
        break;
      case COMMA:
        if (isArray[depth] === 1 && ++arrayItems > maxArrayItems) return arrayItemsViolation(maxArrayItems);
        break;
    }
  }
  return undefined;
}

function arrayItemsViolation(maxArrayItems: number): JsonLimitViolation {
  return { limit: 'arrayItems', message: `more than ${maxArrayItems} array items (the array item limit)` };
}

/** Index of the quote closing the string opened at `open`, or the last index when it is never closed. */
function closingQuote(text: Uint8Array, open: number): number {
  let from = open + 1;
  for (;;) {
    const quote = text.indexOf(QUOTE, from);
    if (quote === -1) return text.length - 1;
    // A quote after an odd run of backslashes is escaped. Each run is counted once: linear overall.
    let backslashes = 0;
    while (text[quote - 1 - backslashes] === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}

/** A key of {@link FORBIDDEN_JSON_KEYS} in a parsed body, and where it is (`tools[0]`, or `''` at the top). */
export interface ForbiddenJsonKey {
  key: string;
  path: string;
}

interface Container {
  value: object;
  parent?: Container;
  /** The key or index under which `parent` holds this container. */
  step?: string | number;
}

/**
 * Finds a forbidden key in a parsed JSON value. Meant for a body within the shape limits (so the
 * walk is short), but iterative, so no nesting can overflow the stack. Decoded keys are compared,
 * so an escaped spelling (`"\u005f_proto__"`) is found too; `JSON.parse` keeps `__proto__` as an
 * own key, so it is seen like any other.
 */
export function findForbiddenKey(body: unknown): ForbiddenJsonKey | undefined {
  if (!isContainer(body)) return undefined;
  const pending: Container[] = [{ value: body }];
  for (let container = pending.pop(); container; container = pending.pop()) {
    const { value } = container;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index += 1) {
        const item: unknown = value[index];
        if (isContainer(item)) pending.push({ value: item, parent: container, step: index });
      }
      continue;
    }
    for (const [key, item] of Object.entries(value)) {
      if (FORBIDDEN_JSON_KEYS.has(key)) return { key, path: pathOf(container) };
      if (isContainer(item)) pending.push({ value: item, parent: container, step: key });
    }
  }
  return undefined;
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/** `tools[0].name`, built only for the one container an error names. */
function pathOf(container: Container): string {
  const steps: Array<string | number> = [];
  for (let at: Container | undefined = container; at?.step !== undefined; at = at.parent) steps.push(at.step);
  steps.reverse();
  return steps.map((step, index) => (typeof step === 'number' ? `[${step}]` : index === 0 ? step : `.${step}`)).join('');
}
