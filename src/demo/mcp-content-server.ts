/**
 * An MCP server whose tools answer with every kind of content a tool result can carry, for tests
 * of structured results (design §8.1): text, images, audio, embedded text and blob resources,
 * resource links, structured content, `isError`, annotations, and results of a requested size.
 *
 *   node build/dev/demo/mcp-content-server.js   → serves over stdio
 *
 * Every byte it sends is deterministic and computed by the functions exported here
 * (`pngOfSize`, `patternBytes`, `textOfSize`, `PIXEL_PNG`), so a test in another process can
 * compute what the server sent and compare it byte for byte.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import * as z from 'zod';

/** The largest image, blob or text a tool makes, so a mistaken call cannot exhaust memory. */
export const MAX_CONTENT_BYTES = 64 * 1024 * 1024;

/** A valid 1×1 RGBA PNG (70 bytes). */
export const PIXEL_PNG: Uint8Array = Uint8Array.from(
  Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mPQqr/yHwAE0QJ94jqzegAAAABJRU5ErkJggg==', 'base64'),
);

/** The pixel PNG's `IEND` chunk: its last 12 bytes. */
const IEND_BYTES = 12;
/** Length, type and CRC of a PNG chunk around its data. */
const CHUNK_OVERHEAD = 12;
/** The smallest PNG `pngOfSize` makes: the pixel with an empty padding chunk. */
export const MIN_PADDED_PNG_BYTES = PIXEL_PNG.length + CHUNK_OVERHEAD;
/**
 * The padding chunk's type: ancillary, private, safe to copy — decoders skip it, so the image
 * stays the valid 1×1 pixel whatever its size.
 */
const PADDING_CHUNK_TYPE = 'paDd';

/** `length` bytes that run through every byte value (byte `i` is `(i * 167 + 13) mod 256`). */
export function patternBytes(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 167 + 13) & 0xff;
  return bytes;
}

/** A valid PNG (the 1×1 pixel) of exactly `size` bytes, padded by a private chunk of `patternBytes`. */
export function pngOfSize(size: number): Uint8Array {
  if (!Number.isInteger(size) || size < MIN_PADDED_PNG_BYTES) {
    throw new RangeError(`a padded PNG has at least ${MIN_PADDED_PNG_BYTES} bytes, got ${size}`);
  }
  const padding = size - MIN_PADDED_PNG_BYTES;
  const png = new Uint8Array(size);
  const beforeEnd = PIXEL_PNG.length - IEND_BYTES;
  png.set(PIXEL_PNG.subarray(0, beforeEnd), 0);
  const chunk = new DataView(png.buffer, beforeEnd, CHUNK_OVERHEAD + padding);
  chunk.setUint32(0, padding);
  png.set(Buffer.from(PADDING_CHUNK_TYPE, 'latin1'), beforeEnd + 4);
  png.set(patternBytes(padding), beforeEnd + 8);
  chunk.setUint32(8 + padding, crc32(png.subarray(beforeEnd + 4, beforeEnd + 8 + padding)));
  png.set(PIXEL_PNG.subarray(beforeEnd), size - IEND_BYTES);
  return png;
}

/** `length` ASCII characters: lines of 63 letters and digits, each ended by "\n". */
export function textOfSize(length: number): string {
  const line = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.\n';
  return line.repeat(Math.ceil(length / line.length)).slice(0, length);
}

type Annotations = { audience?: Array<'user' | 'assistant'>; priority?: number; lastModified?: string };

/** The annotations of `annotated`'s three parts: a text for the user, the pixel for the model, a link for both. */
export const ANNOTATIONS: { text: Annotations; image: Annotations; link: Annotations } = {
  text: { audience: ['user'], priority: 0.9 },
  image: { audience: ['assistant'], priority: 0.1, lastModified: '2025-06-01T12:00:00Z' },
  link: { audience: ['user', 'assistant'], priority: 0.5 },
};
/** `annotated`'s text part and link. */
export const ANNOTATED_TEXT = 'for the user only';
export const ANNOTATED_LINK = { uri: 'file:///annotated.txt', name: 'annotated.txt' };

const byteCount = z.number().int().min(0).max(MAX_CONTENT_BYTES);
const base64 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/** Builds the content server with its tools registered; connect it to any transport. */
export function createContentMcpServer(): McpServer {
  const server = new McpServer({ name: 'mcp-content-server', version: '0.1.0' });

  server.registerTool(
    'text',
    { description: 'Returns the given text as one text part.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );

  server.registerTool(
    'pixel',
    {
      description: 'Returns a 1×1 PNG image, after a text part with the caption if one is given.',
      inputSchema: { caption: z.string().optional() },
    },
    async ({ caption }) => ({
      content: [
        ...(caption === undefined ? [] : [{ type: 'text' as const, text: caption }]),
        { type: 'image', data: base64(PIXEL_PNG), mimeType: 'image/png' },
      ],
    }),
  );

  server.registerTool(
    'image',
    {
      description: `Returns one PNG image of exactly the given number of bytes (at least ${MIN_PADDED_PNG_BYTES}).`,
      inputSchema: { bytes: z.number().int().min(MIN_PADDED_PNG_BYTES).max(MAX_CONTENT_BYTES) },
    },
    async ({ bytes }) => ({ content: [{ type: 'image', data: base64(pngOfSize(bytes)), mimeType: 'image/png' }] }),
  );

  server.registerTool(
    'audio',
    {
      description: 'Returns one audio part of the given number of pattern bytes.',
      inputSchema: { bytes: byteCount.optional().default(64), mimeType: z.string().optional().default('audio/wav') },
    },
    async ({ bytes, mimeType }) => ({ content: [{ type: 'audio', data: base64(patternBytes(bytes)), mimeType }] }),
  );

  server.registerTool(
    'structured',
    {
      description: 'Returns `data` as structured content, beside a text part when `text` is given (and no content at all otherwise).',
      inputSchema: { data: z.record(z.string(), z.unknown()), text: z.string().optional() },
    },
    async ({ data, text }) => ({
      content: text === undefined ? [] : [{ type: 'text', text }],
      structuredContent: data,
    }),
  );

  server.registerTool(
    'fail',
    {
      description: 'Answers with isError and the message as its text part; with `data`, structured content beside it.',
      inputSchema: { message: z.string().optional(), data: z.record(z.string(), z.unknown()).optional() },
    },
    async ({ message, data }) => ({
      isError: true,
      content: [{ type: 'text', text: message ?? 'failed on purpose' }],
      ...(data !== undefined && { structuredContent: data }),
    }),
  );

  server.registerTool(
    'blob',
    {
      description: 'Returns an embedded blob resource of the given number of pattern bytes.',
      inputSchema: {
        bytes: byteCount.optional().default(256),
        uri: z.string().optional().default('file:///blob.bin'),
        mimeType: z.string().optional().default('application/octet-stream'),
      },
    },
    async ({ bytes, uri, mimeType }) => ({
      content: [{ type: 'resource', resource: { uri, mimeType, blob: base64(patternBytes(bytes)) } }],
    }),
  );

  server.registerTool(
    'text_resource',
    {
      description: 'Returns an embedded text resource.',
      inputSchema: {
        text: z.string(),
        uri: z.string().optional().default('file:///note.txt'),
        mimeType: z.string().optional().default('text/plain'),
      },
    },
    async ({ text, uri, mimeType }) => ({ content: [{ type: 'resource', resource: { uri, mimeType, text } }] }),
  );

  server.registerTool(
    'link',
    {
      description: 'Returns a resource link (nothing embedded).',
      inputSchema: {
        uri: z.string().optional().default('file:///report.pdf'),
        name: z.string().optional().default('report.pdf'),
        title: z.string().optional(),
        description: z.string().optional(),
        mimeType: z.string().optional(),
      },
    },
    async ({ uri, name, title, description, mimeType }) => ({
      content: [
        {
          type: 'resource_link',
          uri,
          name,
          ...(title !== undefined && { title }),
          ...(description !== undefined && { description }),
          ...(mimeType !== undefined && { mimeType }),
        },
      ],
    }),
  );

  server.registerTool(
    'large_text',
    { description: 'Returns one text part of exactly the given number of ASCII characters.', inputSchema: { bytes: byteCount } },
    async ({ bytes }) => ({ content: [{ type: 'text', text: textOfSize(bytes) }] }),
  );

  server.registerTool(
    'annotated',
    { description: 'Returns a text part, the 1×1 PNG and a resource link, each with annotations.', inputSchema: {} },
    async () => ({
      content: [
        { type: 'text', text: ANNOTATED_TEXT, annotations: ANNOTATIONS.text },
        { type: 'image', data: base64(PIXEL_PNG), mimeType: 'image/png', annotations: ANNOTATIONS.image },
        { type: 'resource_link', ...ANNOTATED_LINK, annotations: ANNOTATIONS.link },
      ],
    }),
  );

  return server;
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** The CRC-32 PNG chunks carry (ISO 3309). */
function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

async function main(): Promise<void> {
  await createContentMcpServer().connect(new StdioServerTransport());
  // The client closing our stdin means it is gone.
  process.stdin.on('end', () => process.exit(0));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`mcp-content-server: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
