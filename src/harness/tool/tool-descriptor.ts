/** Where a tool comes from. */
export type ToolSource = 'builtin' | 'mcp';

/** Where a tool's call actually runs. */
export type ToolExecutor = 'server' | 'desktop' | 'mcp-server';

/**
 * Who a tool is, where it comes from and where it runs — read by approvals, audit and clients
 * (`GET /api/tools`). Deliberately minimal: fields are added when a real consumer needs them.
 */
export interface ToolDescriptor {
  /** The name the model calls the tool by. */
  name: string;
  /** `builtin` for the server's own tools, `mcp` for tools of an MCP server. */
  source: ToolSource;
  /** `server` (runs in this process), `desktop` (the connected desktop client), `mcp-server`. */
  executor: ToolExecutor;
  /** For `source === 'mcp'`: the id of the MCP server the tool belongs to. */
  serverId?: number;
  /** For `source === 'mcp'`: the tool's own name on its MCP server. */
  originalName?: string;
}
