import {
  optionalBoolean,
  optionalInteger,
  optionalString,
  parseToolArguments,
  requireInteger,
  requireString,
} from './tool-arguments';

describe('parseToolArguments', () => {
  it('returns the object of a JSON object', () => {
    expect(parseToolArguments('{"path":"a.txt","limit":3}')).toEqual({ ok: true, args: { path: 'a.txt', limit: 3 } });
  });

  it('treats an empty or blank string as no arguments', () => {
    expect(parseToolArguments('')).toEqual({ ok: true, args: {} });
    expect(parseToolArguments('  \n')).toEqual({ ok: true, args: {} });
  });

  it('reports malformed JSON', () => {
    const result = parseToolArguments('{"path":');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(/^arguments are not valid JSON: /);
  });

  it.each([
    ['[1,2]', 'array'],
    ['null', 'null'],
    ['42', 'number'],
    ['"text"', 'string'],
    ['true', 'boolean'],
  ])('refuses %s as not an object, naming its type', (json, type) => {
    expect(parseToolArguments(json)).toEqual({ ok: false, error: `arguments must be a JSON object, got ${type}` });
  });

  it('refuses a non-string argumentsJson instead of throwing', () => {
    expect(parseToolArguments(undefined as unknown as string)).toEqual({
      ok: false,
      error: 'arguments must be a JSON object string, got undefined',
    });
  });
});

describe('field readers', () => {
  describe('requireString', () => {
    it('reads a present string', () => {
      expect(requireString({ path: 'a' }, 'path')).toEqual({ ok: true, value: 'a' });
    });

    it('names a missing or null field', () => {
      expect(requireString({}, 'path')).toEqual({ ok: false, error: "missing required field 'path'" });
      expect(requireString({ path: null }, 'path')).toEqual({ ok: false, error: "missing required field 'path'" });
    });

    it('names the field and the wrong type', () => {
      expect(requireString({ path: 3 }, 'path')).toEqual({ ok: false, error: "'path' must be a string, got number" });
    });

    it('refuses an empty string unless allowed', () => {
      expect(requireString({ path: '' }, 'path')).toEqual({ ok: false, error: "'path' must not be empty" });
      expect(requireString({ content: '' }, 'content', { allowEmpty: true })).toEqual({ ok: true, value: '' });
    });

    it('does not read inherited properties', () => {
      expect(requireString({}, 'toString').ok).toBe(false);
    });
  });

  describe('optionalString', () => {
    it('gives undefined when absent and checks the type when present', () => {
      expect(optionalString({}, 'glob')).toEqual({ ok: true, value: undefined });
      expect(optionalString({ glob: '*.ts' }, 'glob')).toEqual({ ok: true, value: '*.ts' });
      expect(optionalString({ glob: ['*.ts'] }, 'glob')).toEqual({ ok: false, error: "'glob' must be a string, got array" });
    });
  });

  describe('optionalInteger / requireInteger', () => {
    it('accepts whole numbers at or above the minimum', () => {
      expect(optionalInteger({ offset: 2 }, 'offset', { min: 1 })).toEqual({ ok: true, value: 2 });
      expect(optionalInteger({}, 'offset')).toEqual({ ok: true, value: undefined });
      expect(requireInteger({ task_id: 7 }, 'task_id')).toEqual({ ok: true, value: 7 });
    });

    it('refuses fractions, strings and values below the minimum, naming the field', () => {
      expect(optionalInteger({ offset: 1.5 }, 'offset')).toEqual({ ok: false, error: "'offset' must be an integer, got 1.5" });
      expect(optionalInteger({ offset: '2' }, 'offset')).toEqual({ ok: false, error: "'offset' must be an integer, got string" });
      expect(optionalInteger({ offset: 0 }, 'offset', { min: 1 })).toEqual({ ok: false, error: "'offset' must be at least 1, got 0" });
      expect(requireInteger({}, 'task_id')).toEqual({ ok: false, error: "missing required field 'task_id'" });
    });
  });

  describe('optionalBoolean', () => {
    it('accepts booleans and refuses anything else', () => {
      expect(optionalBoolean({ async: true }, 'async')).toEqual({ ok: true, value: true });
      expect(optionalBoolean({}, 'async')).toEqual({ ok: true, value: undefined });
      expect(optionalBoolean({ async: 'yes' }, 'async')).toEqual({ ok: false, error: "'async' must be a boolean, got string" });
    });
  });
});
