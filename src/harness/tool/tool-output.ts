/**
 * What a tool that knows its outcome returns instead of a bare string: content parts (the MCP
 * content vocabulary), whether the call failed, and structured content beside the text. Its
 * status is a fact; only a bare string goes through `normalizeToolResult`'s text rule.
 */
export interface ToolOutput {
  /** Marks the value as a `ToolOutput` (a tool's string result can never be mistaken for one). */
  readonly kind: 'tool-output';
  parts: ToolContentPart[];
  /** The call failed (MCP `isError`, a built-in tool's failure, a non-zero exit code). */
  isError?: boolean;
  /** Structured data beside the text (MCP `structuredContent`); never replaces the text. */
  structuredContent?: Record<string, unknown>;
  /** For a failure: the short reason, as `ToolResult.errorMessage`. */
  errorMessage?: string;
}

/** MCP content annotations: who a part is for and how much it matters. */
export interface ContentAnnotations {
  audience?: Array<'user' | 'assistant'>;
  /** 0 (least) to 1 (most important). */
  priority?: number;
  lastModified?: string;
}

export type ToolContentPart = TextPart | ImagePart | ResourcePart | ResourceLinkPart;

export interface TextPart {
  type: 'text';
  text: string;
  annotations?: ContentAnnotations;
}

/** An image, bytes in hand (MCP sends base64; it is decoded once, where it arrives). */
export interface ImagePart {
  type: 'image';
  mediaType: string;
  data: Uint8Array;
  annotations?: ContentAnnotations;
}

/** An embedded resource: text, or bytes (`data`). */
export interface ResourcePart {
  type: 'resource';
  uri: string;
  mediaType?: string;
  text?: string;
  data?: Uint8Array;
  annotations?: ContentAnnotations;
}

/** A link to a resource the client may fetch; nothing is embedded. */
export interface ResourceLinkPart {
  type: 'resource_link';
  uri: string;
  name?: string;
  title?: string;
  description?: string;
  mediaType?: string;
  annotations?: ContentAnnotations;
}

/** A `ToolOutput` of text parts. */
export function toolOutput(parts: ToolContentPart[], options: Omit<ToolOutput, 'kind' | 'parts'> = {}): ToolOutput {
  return { kind: 'tool-output', parts, ...options };
}

/** One text part; `isError` marks a failure whose reason is the text. */
export function textOutput(text: string, isError = false): ToolOutput {
  return isError ? { kind: 'tool-output', parts: [{ type: 'text', text }], isError, errorMessage: text } : { kind: 'tool-output', parts: [{ type: 'text', text }] };
}

/** A failure the model can act on: the text is `{"error":"<message>"}`, with `message` as its reason. */
export function errorOutput(message: string): ToolOutput {
  return { kind: 'tool-output', parts: [{ type: 'text', text: JSON.stringify({ error: message }) }], isError: true, errorMessage: message };
}

export function isToolOutput(value: unknown): value is ToolOutput {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'tool-output' && Array.isArray((value as { parts?: unknown }).parts);
}
