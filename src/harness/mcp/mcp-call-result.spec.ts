import { formatMcpCallResult } from './mcp-call-result';

describe('formatMcpCallResult', () => {
  it('joins the text parts with newlines', () => {
    const result = { content: [{ type: 'text', text: 'first' }, { type: 'text', text: 'second' }] };

    expect(formatMcpCallResult(result)).toBe('first\nsecond');
  });

  it('describes parts the model cannot read as text', () => {
    const result = {
      content: [
        { type: 'text', text: 'see attached' },
        { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'file:///logo.bin', blob: 'AAAA' } },
        { type: 'resource_link', uri: 'file:///report.pdf', name: 'report' },
        { type: 'hologram' },
      ],
    };

    expect(formatMcpCallResult(result)).toBe(
      'see attached\n[image image/png]\n[audio audio/wav]\n[resource file:///logo.bin]\n[resource link file:///report.pdf]\n[hologram content]',
    );
  });

  it('keeps the text of an embedded text resource', () => {
    const result = { content: [{ type: 'resource', resource: { uri: 'file:///a.txt', text: 'hello' } }] };

    expect(formatMcpCallResult(result)).toBe('[resource file:///a.txt]\nhello');
  });

  it('returns structured content as JSON, ignoring its text rendering', () => {
    const result = { structuredContent: { count: 2, items: ['a', 'b'] }, content: [{ type: 'text', text: 'two items' }] };

    expect(formatMcpCallResult(result)).toBe('{"count":2,"items":["a","b"]}');
  });

  it('turns isError into an error object, even when structured content is present', () => {
    const result = {
      isError: true,
      structuredContent: { code: 7 },
      content: [{ type: 'text', text: 'quota exceeded' }, { type: 'text', text: 'try tomorrow' }],
    };

    expect(JSON.parse(formatMcpCallResult(result))).toEqual({ error: 'quota exceeded\ntry tomorrow' });
  });

  it('gives an isError result without text a message of its own', () => {
    expect(JSON.parse(formatMcpCallResult({ isError: true, content: [] }))).toEqual({
      error: 'MCP tool reported an error without a message',
    });
  });

  it('returns the toolResult of an old-protocol server', () => {
    expect(formatMcpCallResult({ toolResult: { ok: true } })).toBe('{"ok":true}');
    expect(formatMcpCallResult({ toolResult: 'plain' })).toBe('plain');
  });

  it('returns an empty string for an empty result', () => {
    expect(formatMcpCallResult({ content: [] })).toBe('');
  });
});
