import type { ToolAnnotations } from '../tool/tool-descriptor';

/** What the harness knows about one tool of one MCP server, enough to offer and call it. */
export interface McpToolRef {
  /** Id of the server in the MCP configuration. */
  serverId: number;
  /** Name of the server; part of the tool name the model sees. */
  serverName: string;
  /** The tool's own name on its server. */
  toolName: string;
  /** The server's description of the tool (may be empty). */
  description: string;
  /** The server's JSON Schema of the tool's arguments. */
  inputSchema: object;
  /** The server's human title for the tool. */
  title?: string;
  /** The server's hints about the tool's behaviour (booleans only; anything else is dropped). */
  annotations?: ToolAnnotations;
  /** The server is marked `"trusted": true` in the MCP configuration: its hints count in approvals. */
  trusted?: boolean;
}
