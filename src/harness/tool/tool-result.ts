import type { ToolAttachment } from './attachment-store';
import type { ContentAnnotations } from './tool-output';

/**
 * The structured answer to one tool call. `status` is decided where the tool ran (the
 * dispatcher) and travels with the result, so no later layer has to guess it again.
 */
export interface ToolResult {
  /** The call this result answers. */
  callId: string;
  status: 'success' | 'error';
  /** What the model reads and what is stored: byte for byte the string the tool produced. */
  content: string;
  /** A short reason, for errors that carry one. */
  errorMessage?: string;
  /** Wall-clock time the call took, in milliseconds. */
  durationMs?: number;
  /**
   * The result's content parts beside `content`, kept with their MCP annotations; binary parts
   * (images, blobs) are references to stored attachments. Absent for a bare string result.
   */
  parts?: ToolResultPart[];
  /** Structured data the tool returned beside its text (MCP `structuredContent`). */
  structuredContent?: Record<string, unknown>;
  /** Binary parts stored once, by id (`GET /api/sessions/:id/attachments/:attachmentId`). */
  attachments?: ToolAttachment[];
  /** Images for models that can see them: bytes in memory, never stored as text. */
  images?: ToolResultImage[];
}

/** An image of a result on its way to the model. */
export interface ToolResultImage {
  mediaType: string;
  /** Base64, as provider APIs take images. */
  data: string;
  attachmentId?: string;
}

/** A content part as a result keeps it: binary data replaced by its attachment. */
export type ToolResultPart =
  | { type: 'text'; text: string; annotations?: ContentAnnotations }
  | { type: 'image'; mediaType: string; attachment?: ToolAttachment; omitted?: string; annotations?: ContentAnnotations }
  | { type: 'resource'; uri: string; mediaType?: string; text?: string; attachment?: ToolAttachment; annotations?: ContentAnnotations }
  | { type: 'resource_link'; uri: string; name?: string; title?: string; description?: string; mediaType?: string; annotations?: ContentAnnotations };

/** The part of a result that listeners receive beside its content. */
export type ToolResultMeta = Pick<ToolResult, 'status' | 'errorMessage' | 'durationMs' | 'attachments' | 'parts' | 'structuredContent'>;

/**
 * Turns a tool's raw string into a `ToolResult`. This is the one place where a result's status
 * is inferred from its text (the WebSocket layer's legacy `isErrorResult` calls it): a JSON object
 * with a top-level `error` key is an error, and so is one whose `exit_code` is not
 * `Number(...) === 0`; everything else (plain text, arrays, invalid JSON) is a success.
 * `errorMessage` is set only from a non-empty string `error` value.
 *
 * Text that cannot be a JSON object (its first non-whitespace character is not `{`) is classified
 * without parsing; anything else is parsed once.
 */
export function normalizeToolResult(callId: string, raw: string, durationMs?: number): ToolResult {
  const result: ToolResult = { callId, status: 'success', content: raw };
  if (durationMs !== undefined) result.durationMs = durationMs;
  if (!mayBeJsonObject(raw)) return result;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return result;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return result;
  if (Object.prototype.hasOwnProperty.call(parsed, 'error')) {
    result.status = 'error';
    const error = (parsed as { error: unknown }).error;
    if (typeof error === 'string' && error !== '') result.errorMessage = error;
  } else if (Object.prototype.hasOwnProperty.call(parsed, 'exit_code')) {
    if (Number((parsed as { exit_code: unknown }).exit_code) !== 0) result.status = 'error';
  }
  return result;
}

/** The meta a listener receives for a result. */
export function toToolResultMeta(result: ToolResult): ToolResultMeta {
  const meta: ToolResultMeta = { status: result.status };
  if (result.errorMessage !== undefined) meta.errorMessage = result.errorMessage;
  if (result.durationMs !== undefined) meta.durationMs = result.durationMs;
  if (result.attachments !== undefined) meta.attachments = result.attachments;
  if (result.parts !== undefined) meta.parts = result.parts;
  if (result.structuredContent !== undefined) meta.structuredContent = result.structuredContent;
  return meta;
}

/** Whether the first character after JSON whitespace (space, tab, LF, CR) is `{`. */
function mayBeJsonObject(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d) continue;
    return code === 0x7b;
  }
  return false;
}
