import { isPlainObject } from '../tool/tool-arguments';
import { errorOutput, toolOutput, type ContentAnnotations, type ToolContentPart, type ToolOutput } from '../tool/tool-output';

/**
 * Turns the result of an MCP `tools/call` into a `ToolOutput`: one part per content item, the
 * server's `isError` as the outcome, `structuredContent` beside the text. Also the `ToolOutput` of
 * a call that never got a result (`errorObjectOutput`).
 */

/** The parts of an MCP call result the harness reads; everything else is ignored. */
export interface McpCallResultLike {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  /** Servers on protocol version 2024-10-07 answer with `toolResult` instead of `content`. */
  toolResult?: unknown;
}

/**
 * Audio has no part of its own in `ToolOutput`: it becomes a resource part whose uri is this
 * prefix and the item's position in the result's content (`audio:2`), so its bytes are kept.
 */
export const AUDIO_URI_PREFIX = 'audio:';

/** What the model reads for an `isError` result that carries no text at all. */
export const ERROR_WITHOUT_MESSAGE = 'MCP tool reported an error without a message';

/**
 * The result as a `ToolOutput`:
 * - text → text part; image → image part (base64 decoded once); audio → resource part
 *   (`AUDIO_URI_PREFIX`); embedded resource → resource part (its text, or its blob decoded);
 *   resource_link → resource_link part; an item of no known shape → a text part naming its type.
 *   Each part keeps the item's annotations (`audience`, `priority`, `lastModified`).
 * - `isError: true` is the outcome; `errorMessage` is the text the model reads.
 * - `structuredContent` travels beside the parts, never instead of them; a result with
 *   structured content and no text gets one text part with its JSON first, so the model reads
 *   it (the MCP spec's advice for older clients). Its keys decide nothing: `{"error": …}` in a
 *   result without `isError` is a success.
 * - an error without any (non-empty) text gets a text part saying so (`ERROR_WITHOUT_MESSAGE`)
 *   first; its `errorMessage` is its non-empty text parts joined with "\n".
 */
export function mcpCallResultToOutput(result: McpCallResultLike): ToolOutput {
  const items = Array.isArray(result.content) ? result.content : [];
  const parts = items.map(toPart);
  if (items.length === 0 && result.toolResult !== undefined) {
    parts.push({ type: 'text', text: typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult) });
  }
  const structuredContent = isPlainObject(result.structuredContent) ? result.structuredContent : undefined;
  if (structuredContent !== undefined && !parts.some(isTextPart)) {
    parts.unshift({ type: 'text', text: JSON.stringify(structuredContent) });
  }
  const isError = result.isError === true;
  if (isError && !parts.some((part) => isTextPart(part) && part.text !== '')) parts.unshift({ type: 'text', text: ERROR_WITHOUT_MESSAGE });
  const errorMessage = () =>
    parts
      .filter(isTextPart)
      .map((part) => part.text)
      .filter((text) => text !== '')
      .join('\n');
  return toolOutput(parts, {
    ...(isError && { isError, errorMessage: errorMessage() }),
    ...(structuredContent !== undefined && { structuredContent }),
  });
}

/**
 * A failure that happened around the call (bad arguments, no connection, a deadline, a
 * cancellation, a refusal): the model reads `{"error": message}`, as it always has for these, and
 * `errorMessage` is the message itself.
 */
export function errorObjectOutput(message: string): ToolOutput {
  return errorOutput(message);
}

function isTextPart(part: ToolContentPart): part is Extract<ToolContentPart, { type: 'text' }> {
  return part.type === 'text';
}

function toPart(item: unknown, index: number): ToolContentPart {
  if (!isPlainObject(item)) return { type: 'text', text: '[unknown content]' };
  const annotations = readAnnotations(item.annotations);
  const annotated = <T extends ToolContentPart>(part: T): T => (annotations === undefined ? part : { ...part, annotations });
  switch (item.type) {
    case 'text':
      if (typeof item.text === 'string') return annotated({ type: 'text', text: item.text });
      break;
    case 'image':
      if (typeof item.data === 'string' && typeof item.mimeType === 'string') {
        return annotated({ type: 'image', mediaType: item.mimeType, data: decodeBase64(item.data) });
      }
      break;
    case 'audio':
      if (typeof item.data === 'string' && typeof item.mimeType === 'string') {
        return annotated({ type: 'resource', uri: `${AUDIO_URI_PREFIX}${index}`, mediaType: item.mimeType, data: decodeBase64(item.data) });
      }
      break;
    case 'resource': {
      const resource = item.resource;
      if (!isPlainObject(resource) || typeof resource.uri !== 'string') break;
      return annotated({
        type: 'resource',
        uri: resource.uri,
        ...(typeof resource.mimeType === 'string' && { mediaType: resource.mimeType }),
        ...(typeof resource.text === 'string' ? { text: resource.text } : typeof resource.blob === 'string' && { data: decodeBase64(resource.blob) }),
      });
    }
    case 'resource_link':
      if (typeof item.uri !== 'string') break;
      return annotated({
        type: 'resource_link',
        uri: item.uri,
        ...(typeof item.name === 'string' && { name: item.name }),
        ...(typeof item.title === 'string' && { title: item.title }),
        ...(typeof item.description === 'string' && { description: item.description }),
        ...(typeof item.mimeType === 'string' && { mediaType: item.mimeType }),
      });
  }
  return annotated({ type: 'text', text: `[${typeof item.type === 'string' ? item.type : 'unknown'} content]` });
}

/** The annotations MCP defines, each kept only when it has its documented type; `_meta` and unknown keys are dropped. */
function readAnnotations(value: unknown): ContentAnnotations | undefined {
  if (!isPlainObject(value)) return undefined;
  const annotations: ContentAnnotations = {};
  if (Array.isArray(value.audience)) {
    annotations.audience = value.audience.filter((role): role is 'user' | 'assistant' => role === 'user' || role === 'assistant');
  }
  if (typeof value.priority === 'number' && Number.isFinite(value.priority)) annotations.priority = value.priority;
  if (typeof value.lastModified === 'string') annotations.lastModified = value.lastModified;
  return Object.keys(annotations).length === 0 ? undefined : annotations;
}

/**
 * Base64 to bytes, as a plain `Uint8Array` that owns its memory: a view over the decoded buffer,
 * except for small ones, which Node decodes into a shared pool and are copied out of it.
 */
function decodeBase64(base64: string): Uint8Array {
  const buffer = Buffer.from(base64, 'base64');
  const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  return buffer.byteLength === buffer.buffer.byteLength ? bytes : bytes.slice();
}
