import {
  ANNOTATED_LINK,
  ANNOTATED_TEXT,
  ANNOTATIONS,
  MIN_PADDED_PNG_BYTES,
  PIXEL_PNG,
  patternBytes,
  pngOfSize,
  textOfSize,
} from '../src/demo/mcp-content-server';
import { AUDIO_URI_PREFIX } from '../src/harness/mcp/mcp-call-result';
import { McpClientManager } from '../src/harness/mcp/mcp-client-manager';
import { McpToolAdapter } from '../src/harness/mcp/mcp-tool-adapter';
import { asToolOutput } from '../src/harness/mcp/testing/tool-output-text';
import { ToolCallContext } from '../src/harness/tool/tool-call-context';
import type { ToolContentPart, ToolOutput } from '../src/harness/tool/tool-output';
import { CONTENT_TOOLS, contentMcpServerConfig, requireBuiltContentMcpServer } from './support/content-mcp-server';

/**
 * What an MCP tool's result becomes on its way to the dispatcher: the content server (a real
 * stdio process) answers with each kind of content, and `McpClientManager` / `McpToolAdapter`
 * must hand it over as a `ToolOutput` with the same parts, the same bytes, the server's
 * `isError`, its annotations and its structured content.
 */

const SERVER_ID = 3;
const SESSION = 1;
const USER = 1;
const WORKSPACE = '/tmp/workspace';
const THREE_MB = 3 * 1024 * 1024;

let manager: McpClientManager;

beforeAll(() => {
  requireBuiltContentMcpServer();
  manager = new McpClientManager([contentMcpServerConfig(SERVER_ID)], { callTimeoutMs: 20_000, connectTimeoutMs: 10_000 });
});

afterAll(() => manager.closeAll());

function call(toolName: string, args: Record<string, unknown> = {}): Promise<ToolOutput> {
  return manager.callTool(SESSION, SERVER_ID, toolName, JSON.stringify(args));
}

/** The bytes of a binary part; fails for a part without any. */
function bytesOf(part: ToolContentPart | undefined): Uint8Array {
  if (part === undefined || !('data' in part) || part.data === undefined) throw new Error(`no bytes in ${JSON.stringify(part)}`);
  return part.data;
}

/** Compares large byte arrays at once (jest's element-wise `toEqual` is slow for megabytes). */
function sameBytes(actual: Uint8Array, expected: Uint8Array): boolean {
  return Buffer.from(actual.buffer, actual.byteOffset, actual.byteLength).equals(expected);
}

describe('an MCP tool result with content of every kind', () => {
  it('comes from a server that offers the tools the tests name', async () => {
    const tools = await manager.listTools(SESSION, SERVER_ID);

    expect(tools.map((tool) => tool.toolName).sort()).toEqual(CONTENT_TOOLS);
  });

  it('gives a text part for a text item', async () => {
    await expect(call('text', { text: 'hello\nworld' })).resolves.toEqual({ kind: 'tool-output', parts: [{ type: 'text', text: 'hello\nworld' }] });
  });

  describe('with images', () => {
    it('gives an image part holding exactly the PNG the server sent, after the text', async () => {
      const output = await call('pixel', { caption: 'one red pixel' });

      expect(output).toEqual({
        kind: 'tool-output',
        parts: [
          { type: 'text', text: 'one red pixel' },
          { type: 'image', mediaType: 'image/png', data: PIXEL_PNG },
        ],
      });
      expect(bytesOf(output.parts[1]).constructor).toBe(Uint8Array);
    });

    it('carries a 3 MB image byte for byte', async () => {
      const output = await call('image', { bytes: THREE_MB });

      expect(output.isError).toBeUndefined();
      expect(output.parts).toHaveLength(1);
      expect(output.parts[0]).toMatchObject({ type: 'image', mediaType: 'image/png' });
      const data = bytesOf(output.parts[0]);
      expect(data.byteLength).toBe(THREE_MB);
      expect(sameBytes(data, pngOfSize(THREE_MB))).toBe(true);
    });

    it('carries the smallest sized image too', async () => {
      const output = await call('image', { bytes: MIN_PADDED_PNG_BYTES });

      expect(output.parts).toEqual([{ type: 'image', mediaType: 'image/png', data: pngOfSize(MIN_PADDED_PNG_BYTES) }]);
    });
  });

  it('gives a 3 MB text part whole', async () => {
    const output = await call('large_text', { bytes: THREE_MB });

    expect(output.parts).toHaveLength(1);
    const part = output.parts[0];
    expect(part.type).toBe('text');
    expect(part.type === 'text' && part.text.length).toBe(THREE_MB);
    expect(part.type === 'text' && part.text === textOfSize(THREE_MB)).toBe(true);
  });

  describe('with structured content', () => {
    it('keeps it beside the text, which the model still reads', async () => {
      await expect(call('structured', { data: { count: 3, items: ['a', 'b', 'c'] }, text: 'three items' })).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'three items' }],
        structuredContent: { count: 3, items: ['a', 'b', 'c'] },
      });
    });

    it('adds its JSON as the text when the server sent no text', async () => {
      await expect(call('structured', { data: { count: 1 } })).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: '{"count":1}' }],
        structuredContent: { count: 1 },
      });
    });

    it('is a success though it holds error and exit_code keys, since the server did not say isError', async () => {
      const output = await call('structured', { data: { error: 'not found', exit_code: 2 }, text: 'searched, found nothing' });

      expect(output.isError).toBeUndefined();
      expect(output.errorMessage).toBeUndefined();
      expect(output.structuredContent).toEqual({ error: 'not found', exit_code: 2 });
      expect(output.parts).toEqual([{ type: 'text', text: 'searched, found nothing' }]);
    });
  });

  describe('when the server says isError', () => {
    it("is an error whose text is the server's, unwrapped", async () => {
      await expect(call('fail', { message: 'disk full' })).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'disk full' }],
        isError: true,
        errorMessage: 'disk full',
      });
    });

    it('keeps structured content beside the error', async () => {
      await expect(call('fail', { message: 'quota exceeded', data: { retryAfterSeconds: 60 } })).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'quota exceeded' }],
        isError: true,
        errorMessage: 'quota exceeded',
        structuredContent: { retryAfterSeconds: 60 },
      });
    });
  });

  describe('with resources', () => {
    it('gives an embedded blob as a resource part with its bytes', async () => {
      const output = await call('blob', { bytes: 1000, uri: 'file:///data/sample.bin', mimeType: 'application/x-sample' });

      expect(output.parts).toEqual([{ type: 'resource', uri: 'file:///data/sample.bin', mediaType: 'application/x-sample', data: patternBytes(1000) }]);
    });

    it('gives an embedded text resource as a resource part with its text', async () => {
      await expect(call('text_resource', { text: 'line one\nline two', uri: 'file:///notes.md', mimeType: 'text/markdown' })).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'resource', uri: 'file:///notes.md', mediaType: 'text/markdown', text: 'line one\nline two' }],
      });
    });

    it('gives a resource link as a resource_link part', async () => {
      const output = await call('link', { title: 'Quarterly report', description: 'Q3, final', mimeType: 'application/pdf' });

      expect(output.parts).toEqual([
        { type: 'resource_link', uri: 'file:///report.pdf', name: 'report.pdf', title: 'Quarterly report', description: 'Q3, final', mediaType: 'application/pdf' },
      ]);
    });

    it('keeps audio as a resource part with its bytes', async () => {
      const output = await call('audio', { bytes: 300 });

      expect(output.parts).toEqual([{ type: 'resource', uri: `${AUDIO_URI_PREFIX}0`, mediaType: 'audio/wav', data: patternBytes(300) }]);
    });
  });

  it('keeps the annotations of each part', async () => {
    await expect(call('annotated')).resolves.toEqual({
      kind: 'tool-output',
      parts: [
        { type: 'text', text: ANNOTATED_TEXT, annotations: ANNOTATIONS.text },
        { type: 'image', mediaType: 'image/png', data: PIXEL_PNG, annotations: ANNOTATIONS.image },
        { type: 'resource_link', ...ANNOTATED_LINK, annotations: ANNOTATIONS.link },
      ],
    });
  });
});

describe('McpToolAdapter in CLOUD mode', () => {
  function adapter(toolName: string): McpToolAdapter {
    return new McpToolAdapter({ serverId: SERVER_ID, serverName: 'content', toolName, description: '', inputSchema: { type: 'object' } }, manager);
  }

  /** Runs the call as the dispatcher does: inside the call's scope. */
  async function run(toolName: string, args: Record<string, unknown>): Promise<ToolOutput> {
    const answer = await ToolCallContext.runScope({ callId: `call_${toolName}`, signal: new AbortController().signal }, async () =>
      adapter(toolName).execute(JSON.stringify(args), SESSION, USER, WORKSPACE),
    );
    return asToolOutput(answer);
  }

  it('returns the ToolOutput the manager made, parts, bytes and annotations included', async () => {
    await expect(run('annotated', {})).resolves.toEqual(await call('annotated'));
    const blob = await run('blob', { bytes: 70_000 });
    expect(sameBytes(bytesOf(blob.parts[0]), patternBytes(70_000))).toBe(true);
  });

  it("returns the server's isError as the outcome", async () => {
    await expect(run('fail', { message: 'no' })).resolves.toMatchObject({ isError: true, errorMessage: 'no', parts: [{ type: 'text', text: 'no' }] });
    await expect(run('structured', { data: { error: 'x' }, text: 'fine' })).resolves.not.toHaveProperty('isError');
  });

  it('answers a call the server rejects with an error the model reads', async () => {
    const output = await run('image', { bytes: 1 });

    expect(output.isError).toBe(true);
    expect(output.errorMessage).toContain('bytes');
  });
});
