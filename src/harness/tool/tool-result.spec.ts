import fc from 'fast-check';
import { normalizeToolResult, toToolResultMeta } from './tool-result';

describe('normalizeToolResult', () => {
  describe('when the result is an error object', () => {
    it('is an error with the message of a string error value', () => {
      expect(normalizeToolResult('call-1', '{"error":"file not found"}', 12)).toEqual({
        callId: 'call-1',
        status: 'error',
        content: '{"error":"file not found"}',
        errorMessage: 'file not found',
        durationMs: 12,
      });
    });

    it.each(['{"error":null}', '{"error":{"code":404}}', '{"error":42}', '{"error":""}', '{"error":["a"]}'])(
      'is an error without a message for %s',
      (raw) => {
        const result = normalizeToolResult('c', raw);
        expect(result.status).toBe('error');
        expect(result).not.toHaveProperty('errorMessage');
      },
    );

    it('is an error for a non-zero exit code, without a message', () => {
      expect(normalizeToolResult('c', '{"exit_code":2,"stderr":"boom"}')).toEqual({ callId: 'c', status: 'error', content: '{"exit_code":2,"stderr":"boom"}' });
      expect(normalizeToolResult('c', '{"exit_code":"abc"}').status).toBe('error');
    });

    it('lets an error key win over a zero exit code', () => {
      expect(normalizeToolResult('c', '{"exit_code":0,"error":"killed"}')).toEqual(
        expect.objectContaining({ status: 'error', errorMessage: 'killed' }),
      );
    });
  });

  describe('when the result is not an error object', () => {
    it.each([
      ['plain text', 'hello'],
      ['an empty string', ''],
      ['invalid JSON', '{"error":'],
      ['an array holding an error', '[{"error":"x"}]'],
      ['a nested error', '{"result":{"error":"x"}}'],
      ['a zero exit code', '{"exit_code":0}'],
      ['a null exit code', '{"exit_code":null}'],
      ['a JSON string', '"error"'],
    ])('is a success for %s', (_label, raw) => {
      expect(normalizeToolResult('c', raw)).toEqual({ callId: 'c', status: 'success', content: raw });
    });

    it('omits durationMs when none is given', () => {
      expect(normalizeToolResult('c', 'x')).not.toHaveProperty('durationMs');
    });
  });

  it('keeps the content byte for byte', () => {
    const raw = ' \n{"error" : "é\\u0000 ☃", "x": [1,2]}\t';
    expect(normalizeToolResult('c', raw).content).toBe(raw);
  });

  describe('agreement with the plain parse-everything rule', () => {
    /** The rule written the obvious way (parse every text), against which the parse-skipping fast path is checked. */
    function isErrorByParsing(raw: string): boolean {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        return false;
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return false;
      if (Object.prototype.hasOwnProperty.call(parsed, 'error')) return true;
      if (Object.prototype.hasOwnProperty.call(parsed, 'exit_code')) return Number((parsed as { exit_code: unknown }).exit_code) !== 0;
      return false;
    }

    const whitespace = fc.constantFrom('', ' ', '\n', '\t', '\r\n', '  \t', '\u00a0', '\ufeff');
    const interesting = fc.oneof(
      fc.json(),
      fc.jsonValue().map((value) => JSON.stringify(value)),
      fc.dictionary(fc.constantFrom('error', 'exit_code', 'stdout', 'result', '__proto__'), fc.jsonValue()).map((value) => JSON.stringify(value)),
      fc.record({ exit_code: fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.boolean(), fc.double()) }).map((value) => JSON.stringify(value)),
      fc.string(),
      fc.string().map((text) => `{${text}`),
    );

    it('classifies every generated result exactly as parsing it always would, and keeps its content', () => {
      fc.assert(
        fc.property(whitespace, interesting, whitespace, (before, body, after) => {
          const raw = before + body + after;
          const result = normalizeToolResult('c', raw);
          expect(result.status === 'error').toBe(isErrorByParsing(raw));
          expect(result.content).toBe(raw);
          if (result.errorMessage !== undefined) {
            expect(result.status).toBe('error');
            expect((JSON.parse(raw) as { error: unknown }).error).toBe(result.errorMessage);
          }
        }),
        { numRuns: 2000 },
      );
    });
  });

  describe('parsing cost', () => {
    afterEach(() => jest.restoreAllMocks());

    it('does not parse text whose first non-whitespace character is not {', () => {
      const parse = jest.spyOn(JSON, 'parse');
      for (const raw of ['plain text', ' [1,2]', '\n"error"', '42', '', '   ', 'x'.repeat(100_000)]) {
        expect(normalizeToolResult('c', raw).status).toBe('success');
      }
      expect(parse).not.toHaveBeenCalled();
    });

    it('parses a candidate object once', () => {
      const parse = jest.spyOn(JSON, 'parse');
      normalizeToolResult('c', ' {"error":"x"}');
      expect(parse).toHaveBeenCalledTimes(1);
    });
  });
});

describe('toToolResultMeta', () => {
  it('carries status, errorMessage and durationMs, and nothing else', () => {
    expect(toToolResultMeta({ callId: 'c', status: 'error', content: 'x', errorMessage: 'm', durationMs: 3 })).toEqual({
      status: 'error',
      errorMessage: 'm',
      durationMs: 3,
    });
    expect(toToolResultMeta({ callId: 'c', status: 'success', content: 'x' })).toEqual({ status: 'success' });
  });
});
