import fc from 'fast-check';
import { findForbiddenKey, findJsonLimitViolation, JSON_SHAPE_LIMITS, type JsonShapeLimits } from './json-body-limits';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

/** The shape of a parsed value, measured the obvious (recursive) way. */
function measure(value: unknown, depth = 0): { depth: number; keys: number; arrayItems: number } {
  if (typeof value !== 'object' || value === null) return { depth, keys: 0, arrayItems: 0 };
  const children = Array.isArray(value) ? value : Object.values(value);
  const own = { depth: depth + 1, keys: Array.isArray(value) ? 0 : children.length, arrayItems: Array.isArray(value) ? children.length : 0 };
  return children.reduce<typeof own>((sum, child) => {
    const inner = measure(child, depth + 1);
    return { depth: Math.max(sum.depth, inner.depth), keys: sum.keys + inner.keys, arrayItems: sum.arrayItems + inner.arrayItems };
  }, own);
}

/** Strings made mostly of what is significant outside them, so that a scanner misreading a string miscounts. */
const trickyString = fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', ':', ',', ' ', 'a', 'é', '😀', '\n'), maxLength: 8 });

const { trickyJson } = fc.letrec<{ trickyJson: unknown }>((tie) => ({
  trickyJson: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(null, true, 0, -1.5e300),
    trickyString,
    fc.array(tie('trickyJson'), { maxLength: 4 }),
    fc.dictionary(trickyString, tie('trickyJson'), { maxKeys: 4 }),
  ),
}));

describe('findJsonLimitViolation', () => {
  const small: JsonShapeLimits = { maxDepth: 3, maxKeys: 4, maxArrayItems: 5 };

  it('agrees with a walk of the parsed value on any JSON text, however spaced and whatever its strings hold', () => {
    const anyJson = fc.oneof(fc.jsonValue({ maxDepth: 5, stringUnit: 'binary' }), trickyJson);
    fc.assert(
      fc.property(anyJson, fc.constantFrom(undefined, 1, '\t'), (value, indent) => {
        const shape = measure(value);
        const violation = findJsonLimitViolation(bytes(JSON.stringify(value, null, indent)), small);
        const over = { depth: shape.depth > small.maxDepth, keys: shape.keys > small.maxKeys, arrayItems: shape.arrayItems > small.maxArrayItems };
        if (violation) expect(over[violation.limit]).toBe(true);
        else expect(over).toEqual({ depth: false, keys: false, arrayItems: false });
      }),
      { numRuns: 2_000 },
    );
  });

  describe('when a text is within the limits', () => {
    it.each([
      ['brackets, colons and commas inside strings', '{"a:[{,":"]]]]::,,,{{{{"}'],
      ['escaped quotes and backslashes', String.raw`{"k\"": "\\", "x": "\\\"[[[[[[,,,,,,::::"}`],
      ['brackets after an escaped quote', String.raw`["\"[[[[[[", "\\"]`],
      ['an empty body', ''],
      ['empty containers', '[[], {}, [{}], {"a": []}]'],
    ])('finds nothing in %s', (_label, text) => {
      expect(findJsonLimitViolation(bytes(text), small)).toBeUndefined();
    });

    it('finds nothing in a body at each limit', () => {
      expect(findJsonLimitViolation(bytes('[[[1]]]'), small)).toBeUndefined();
      expect(findJsonLimitViolation(bytes('{"a":1,"b":{"c":2,"d":3}}'), small)).toBeUndefined();
      expect(findJsonLimitViolation(bytes('[1,[2,3],[]]'), small)).toBeUndefined();
    });
  });

  describe('when a text breaks a limit', () => {
    it.each([
      ['depth', '[[[[1]]]]', 'nested deeper than 3 levels (the depth limit)'],
      ['keys', '{"a":1,"b":{"c":2,"d":3},"e":4}', 'more than 4 object keys (the key limit)'],
      ['arrayItems', '[1,[2,3],[4,5,6]]', 'more than 5 array items (the array item limit)'],
      ['arrayItems', '[[],[],[],[],[],[]]', 'more than 5 array items (the array item limit)'],
    ])('names the %s limit', (limit, text, message) => {
      expect(findJsonLimitViolation(bytes(text), small)).toEqual({ limit, message });
    });

    it('reports the limit broken first and ignores what follows, even malformed text', () => {
      expect(findJsonLimitViolation(bytes('[[[[ this is not JSON'), small)?.limit).toBe('depth');
      expect(findJsonLimitViolation(bytes(`{${'"k":0,'.repeat(5)}"unclosed`), small)?.limit).toBe('keys');
    });
  });

  it('measures malformed text as far as it goes without failing', () => {
    for (const text of ['"never closed', '{"a":"\\', ']]]}}}', '\\"\\"\\"', '{"a" "b"}']) {
      expect(() => findJsonLimitViolation(bytes(text), small)).not.toThrow();
    }
  });

  it('holds request bodies to the exported limits by default', () => {
    const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
    expect(findJsonLimitViolation(bytes(deep(JSON_SHAPE_LIMITS.maxDepth)))).toBeUndefined();
    expect(findJsonLimitViolation(bytes(deep(JSON_SHAPE_LIMITS.maxDepth + 1)))?.limit).toBe('depth');
  });
});

describe('findForbiddenKey', () => {
  it.each([
    ['at the top level', '{"a":1,"__proto__":{"admin":true}}', { key: '__proto__', path: '' }],
    ['inside a field', '{"a":{"b":{"constructor":1}}}', { key: 'constructor', path: 'a.b' }],
    ['inside an array item', '{"tools":["x",{"prototype":{}}]}', { key: 'prototype', path: 'tools[1]' }],
    ['in a top-level array', '[[{"__proto__":null}]]', { key: '__proto__', path: '[0][0]' }],
    ['spelled with escapes', '{"\\u005f_proto__":{}}', { key: '__proto__', path: '' }],
  ])('finds a forbidden key %s, with its path', (_label, text, found) => {
    expect(findForbiddenKey(JSON.parse(text))).toEqual(found);
  });

  it.each([
    ['the names as values', '{"a":"__proto__","b":["constructor","prototype"]}'],
    ['similar keys', '{"proto":1,"__proto":2,"Constructor":3,"prototypes":4}'],
    ['a scalar body', '"__proto__"'],
  ])('finds nothing in %s', (_label, text) => {
    expect(findForbiddenKey(JSON.parse(text))).toBeUndefined();
  });

  it('walks nesting far deeper than the call stack allows', () => {
    let value: unknown = { constructor: 1 };
    for (let level = 0; level < 200_000; level += 1) value = [value];
    expect(findForbiddenKey(value)?.key).toBe('constructor');
  });
});
