/**
 * Turns the result of an MCP `tools/call` into the string the model reads, following the
 * harness's legacy result convention (a JSON object with an `error` key is a failure).
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
 * `isError` → `{"error": <text parts joined with "\n">}`; `structuredContent` → its JSON;
 * otherwise the content parts joined with "\n", non-text parts described in brackets
 * (`[image image/png]`), since the model cannot read binary data from a string.
 */
export function formatMcpCallResult(result: McpCallResultLike): string {
  const parts = Array.isArray(result.content) ? result.content.map(describePart) : [];
  if (result.isError === true) {
    const text = parts.join('\n');
    return JSON.stringify({ error: text === '' ? 'MCP tool reported an error without a message' : text });
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    return JSON.stringify(result.structuredContent);
  }
  if (!Array.isArray(result.content) && result.toolResult !== undefined) {
    return typeof result.toolResult === 'string' ? result.toolResult : JSON.stringify(result.toolResult);
  }
  return parts.join('\n');
}

function describePart(part: unknown): string {
  if (typeof part !== 'object' || part === null) return '[unknown content]';
  const item = part as Record<string, unknown>;
  switch (item.type) {
    case 'text':
      return typeof item.text === 'string' ? item.text : '';
    case 'image':
    case 'audio':
      return `[${item.type} ${typeof item.mimeType === 'string' ? item.mimeType : 'unknown type'}]`;
    case 'resource': {
      const resource = (typeof item.resource === 'object' && item.resource !== null ? item.resource : {}) as Record<string, unknown>;
      const header = `[resource ${typeof resource.uri === 'string' ? resource.uri : 'without uri'}]`;
      // A text resource is content the model can use; a blob is not.
      return typeof resource.text === 'string' ? `${header}\n${resource.text}` : header;
    }
    case 'resource_link':
      return `[resource link ${typeof item.uri === 'string' ? item.uri : 'without uri'}]`;
    default:
      return `[${typeof item.type === 'string' ? item.type : 'unknown'} content]`;
  }
}
