/** Where a tool comes from. */
export type ToolSource = 'builtin' | 'mcp';

/** Where a tool's call actually runs. */
export type ToolExecutor = 'server' | 'desktop' | 'mcp-server';

/**
 * What a tool says of its own behaviour, in MCP's vocabulary (`ToolAnnotations`). Hints, not
 * guarantees: an MCP server's count in approvals only when the server is trusted.
 */
export interface ToolAnnotations {
  /** The tool changes nothing in its environment. */
  readOnlyHint?: boolean;
  /** When it changes something, it may destroy or overwrite (MCP's default when not read-only). */
  destructiveHint?: boolean;
  /** Calling it again with the same arguments has no further effect. */
  idempotentHint?: boolean;
  /** It reaches beyond a closed domain (the network, the open web). */
  openWorldHint?: boolean;
}

/**
 * Who a tool is, where it comes from and where it runs, and what it does to the world — read by
 * approvals, scheduling, audit and clients (`GET /api/tools`).
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
  /** A human title for display. */
  title?: string;
  /** The tool's own account of its behaviour. */
  annotations?: ToolAnnotations;
  /** For `source === 'mcp'`: the server is marked `"trusted": true`, so its annotations count. */
  trusted?: boolean;
  /**
   * Runs on the server whatever the session's mode and changes only the session's own records
   * (its todo list), so no permission level stops it.
   */
  serverOnly?: boolean;
  /** Changes files, and only files of the session workspace (what `READ_WRITE` permits). */
  writesFiles?: boolean;
  /** Runs arbitrary commands (the `shell` tool): asked before at every level but `FULL`. */
  runsCommands?: boolean;
}
