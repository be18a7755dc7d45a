import { isToolOutput } from '../tool-output';
import { errorResult, jsonResult, resultText, textResult } from './json-result';

describe('json-result', () => {
  it('errorResult states a failure whose text is the legacy {"error": message}, byte for byte', () => {
    const message = 'no such file or directory: \'a "quoted" path\'';
    const output = errorResult(message);
    expect(isToolOutput(output)).toBe(true);
    expect(output).toEqual({
      kind: 'tool-output',
      parts: [{ type: 'text', text: JSON.stringify({ error: message }) }],
      isError: true,
      errorMessage: message,
    });
  });

  it('jsonResult is a success whose text is the JSON of the value', () => {
    const output = jsonResult({ path: 'a.txt', bytes: 3 });
    expect(output).toEqual({ kind: 'tool-output', parts: [{ type: 'text', text: '{"path":"a.txt","bytes":3}' }] });
    expect(output.isError).toBeUndefined();
  });

  it('textResult is a success whatever its text holds', () => {
    expect(textResult('{"error":"x"}')).toEqual({ kind: 'tool-output', parts: [{ type: 'text', text: '{"error":"x"}' }] });
  });

  it('resultText gives back the text, for a failure as for a success', () => {
    expect(resultText(errorResult('boom'))).toBe('{"error":"boom"}');
    expect(resultText(textResult('plain\ntext'))).toBe('plain\ntext');
  });
});
