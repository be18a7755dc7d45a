import { AUDIO_URI_PREFIX, ERROR_WITHOUT_MESSAGE, errorObjectOutput, mcpCallResultToOutput } from './mcp-call-result';

const PNG_BYTES = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff]);
const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');

describe('mcpCallResultToOutput', () => {
  it('makes each text item a text part, in order', () => {
    const result = { content: [{ type: 'text', text: 'first' }, { type: 'text', text: 'second' }] };

    expect(mcpCallResultToOutput(result)).toEqual({
      kind: 'tool-output',
      parts: [
        { type: 'text', text: 'first' },
        { type: 'text', text: 'second' },
      ],
    });
  });

  describe('with binary content', () => {
    it('decodes an image into a plain Uint8Array of the bytes the server sent', () => {
      const output = mcpCallResultToOutput({ content: [{ type: 'image', data: base64(PNG_BYTES), mimeType: 'image/png' }] });

      expect(output.parts).toEqual([{ type: 'image', mediaType: 'image/png', data: PNG_BYTES }]);
      const { data } = output.parts[0] as { data: Uint8Array };
      expect(data.constructor).toBe(Uint8Array);
      // A small decode must not hand out Node's shared buffer pool.
      expect(data.buffer.byteLength).toBe(PNG_BYTES.length);
    });

    it('keeps audio as a resource part named by its position, with its bytes', () => {
      const output = mcpCallResultToOutput({
        content: [
          { type: 'text', text: 'listen' },
          { type: 'audio', data: base64(PNG_BYTES), mimeType: 'audio/wav' },
        ],
      });

      expect(output.parts[1]).toEqual({ type: 'resource', uri: `${AUDIO_URI_PREFIX}1`, mediaType: 'audio/wav', data: PNG_BYTES });
    });

    it('makes an embedded blob a resource part with the decoded bytes', () => {
      const output = mcpCallResultToOutput({
        content: [{ type: 'resource', resource: { uri: 'file:///logo.bin', mimeType: 'application/octet-stream', blob: base64(PNG_BYTES) } }],
      });

      expect(output.parts).toEqual([{ type: 'resource', uri: 'file:///logo.bin', mediaType: 'application/octet-stream', data: PNG_BYTES }]);
    });
  });

  it('makes an embedded text resource a resource part with its text', () => {
    const output = mcpCallResultToOutput({ content: [{ type: 'resource', resource: { uri: 'file:///a.txt', text: 'hello' } }] });

    expect(output.parts).toEqual([{ type: 'resource', uri: 'file:///a.txt', text: 'hello' }]);
  });

  it('makes a resource link a resource_link part, its mimeType as mediaType', () => {
    const output = mcpCallResultToOutput({
      content: [
        {
          type: 'resource_link',
          uri: 'file:///report.pdf',
          name: 'report',
          title: 'Q3 report',
          description: 'The quarterly report',
          mimeType: 'application/pdf',
          size: 1234,
        },
      ],
    });

    expect(output.parts).toEqual([
      { type: 'resource_link', uri: 'file:///report.pdf', name: 'report', title: 'Q3 report', description: 'The quarterly report', mediaType: 'application/pdf' },
    ]);
  });

  it('keeps the annotations of every kind of part, and only the ones MCP defines', () => {
    const annotations = { audience: ['user'], priority: 0.25, lastModified: '2025-01-02T03:04:05Z' };
    const output = mcpCallResultToOutput({
      content: [
        { type: 'text', text: 'for you', annotations: { ...annotations, _meta: { x: 1 }, colour: 'red' } },
        { type: 'image', data: base64(PNG_BYTES), mimeType: 'image/png', annotations: { audience: ['assistant'] } },
        { type: 'resource', resource: { uri: 'file:///a.txt', text: 'a' }, annotations: { priority: 1 } },
        { type: 'resource_link', uri: 'file:///b', name: 'b', annotations: { lastModified: '2025-01-01T00:00:00Z' } },
        { type: 'text', text: 'plain', annotations: {} },
      ],
    });

    expect(output.parts.map((part) => part.annotations)).toEqual([
      annotations,
      { audience: ['assistant'] },
      { priority: 1 },
      { lastModified: '2025-01-01T00:00:00Z' },
      undefined,
    ]);
    expect('annotations' in output.parts[4]).toBe(false);
  });

  it('names the type of an item it cannot read', () => {
    const output = mcpCallResultToOutput({ content: [{ type: 'hologram' }, { type: 'image', mimeType: 'image/png' }, 'junk'] });

    expect(output.parts).toEqual([
      { type: 'text', text: '[hologram content]' },
      { type: 'text', text: '[image content]' },
      { type: 'text', text: '[unknown content]' },
    ]);
  });

  describe('when the server says isError', () => {
    it('is an error whose message is the text, unwrapped', () => {
      const output = mcpCallResultToOutput({
        isError: true,
        content: [
          { type: 'text', text: 'quota exceeded' },
          { type: 'text', text: 'try tomorrow' },
        ],
      });

      expect(output).toEqual({
        kind: 'tool-output',
        parts: [
          { type: 'text', text: 'quota exceeded' },
          { type: 'text', text: 'try tomorrow' },
        ],
        isError: true,
        errorMessage: 'quota exceeded\ntry tomorrow',
      });
    });

    it('keeps structured content beside the error text', () => {
      const output = mcpCallResultToOutput({ isError: true, structuredContent: { code: 7 }, content: [{ type: 'text', text: 'quota exceeded' }] });

      expect(output).toMatchObject({ isError: true, errorMessage: 'quota exceeded', structuredContent: { code: 7 } });
      expect(output.parts).toEqual([{ type: 'text', text: 'quota exceeded' }]);
    });

    it('gives an error without any text a text part of its own, before its other parts', () => {
      const output = mcpCallResultToOutput({ isError: true, content: [{ type: 'image', data: base64(PNG_BYTES), mimeType: 'image/png' }] });

      expect(output.parts).toEqual([
        { type: 'text', text: ERROR_WITHOUT_MESSAGE },
        { type: 'image', mediaType: 'image/png', data: PNG_BYTES },
      ]);
      expect(output.errorMessage).toBe(ERROR_WITHOUT_MESSAGE);
    });

    it('treats an empty text as no message', () => {
      const output = mcpCallResultToOutput({ isError: true, content: [{ type: 'text', text: '' }] });

      expect(output.parts).toEqual([
        { type: 'text', text: ERROR_WITHOUT_MESSAGE },
        { type: 'text', text: '' },
      ]);
      expect(output.errorMessage).toBe(ERROR_WITHOUT_MESSAGE);
    });
  });

  it.each([false, undefined, 'true', 1])('is a success when isError is %p', (isError) => {
    const output = mcpCallResultToOutput({ isError, content: [{ type: 'text', text: 'ok' }] });

    expect(output.isError).toBeUndefined();
    expect(output.errorMessage).toBeUndefined();
  });

  describe('with structured content', () => {
    it('keeps it beside the text, which it never replaces', () => {
      const result = { structuredContent: { count: 2, items: ['a', 'b'] }, content: [{ type: 'text', text: 'two items' }] };

      expect(mcpCallResultToOutput(result)).toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'two items' }],
        structuredContent: { count: 2, items: ['a', 'b'] },
      });
    });

    it('adds its JSON as the first text part when the result has no text', () => {
      const result = {
        structuredContent: { count: 1 },
        content: [{ type: 'resource_link', uri: 'file:///x', name: 'x' }],
      };

      expect(mcpCallResultToOutput(result).parts).toEqual([
        { type: 'text', text: '{"count":1}' },
        { type: 'resource_link', uri: 'file:///x', name: 'x' },
      ]);
    });

    it.each([{ error: 'not found' }, { exit_code: 2 }])('is a success when it holds %p without isError', (structuredContent) => {
      const output = mcpCallResultToOutput({ structuredContent, content: [] });

      expect(output).toEqual({ kind: 'tool-output', parts: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent });
    });

    it('ignores structured content that is not an object', () => {
      expect(mcpCallResultToOutput({ structuredContent: [1, 2], content: [{ type: 'text', text: 'x' }] })).toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'x' }],
      });
    });
  });

  it('reads the toolResult of an old-protocol server as text', () => {
    expect(mcpCallResultToOutput({ toolResult: { ok: true } }).parts).toEqual([{ type: 'text', text: '{"ok":true}' }]);
    expect(mcpCallResultToOutput({ content: [], toolResult: 'plain' }).parts).toEqual([{ type: 'text', text: 'plain' }]);
  });

  it('gives no parts for an empty result', () => {
    expect(mcpCallResultToOutput({ content: [] })).toEqual({ kind: 'tool-output', parts: [] });
  });
});

describe('errorObjectOutput', () => {
  it('is an error the model reads as the JSON error object, with the bare message beside', () => {
    expect(errorObjectOutput('MCP tool call failed: "x" broke')).toEqual({
      kind: 'tool-output',
      parts: [{ type: 'text', text: '{"error":"MCP tool call failed: \\"x\\" broke"}' }],
      isError: true,
      errorMessage: 'MCP tool call failed: "x" broke',
    });
  });
});
