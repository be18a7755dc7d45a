/**
 * How MCP tools are named for the model: `mcp__<serverName>__<toolName>`. The one place that
 * knows it; the adapter, the catalog, the audit describer and the dispatcher's fallback use it.
 */

/** Separates `mcp`, the server name and the tool name in the name the model sees. */
export const MCP_TOOL_NAME_SEPARATOR = '__';

/**
 * Tool names with this prefix are MCP tools. Fallback only: whether a tool is an MCP tool is a
 * fact of its descriptor (`source: 'mcp'`); the prefix covers tools without one.
 */
export const MCP_TOOL_PREFIX = `mcp${MCP_TOOL_NAME_SEPARATOR}`;

/** The name the model calls an MCP tool by. */
export function mcpToolName(serverName: string, toolName: string): string {
  return ['mcp', serverName, toolName].join(MCP_TOOL_NAME_SEPARATOR);
}

/**
 * Reads `mcp__<serverName>__<toolName>` back into its parts; `undefined` for any other name.
 * For display and validation only: a name proves nothing about where a tool comes from.
 */
export function parseMcpToolName(name: string): { serverName: string; toolName: string } | undefined {
  const parts = name.split(MCP_TOOL_NAME_SEPARATOR);
  if (parts.length < 3 || parts[0] !== 'mcp' || parts[1] === '') return undefined;
  const toolName = parts.slice(2).join(MCP_TOOL_NAME_SEPARATOR);
  return toolName === '' ? undefined : { serverName: parts[1], toolName };
}
