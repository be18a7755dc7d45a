/** The MCP configuration is unusable; `field` names the offending entry (`servers[1].url`). */
export class McpConfigError extends Error {
  override readonly name = 'McpConfigError';
  constructor(
    message: string,
    readonly field: string | null = null,
  ) {
    super(message);
  }
}

/** No MCP server with this id is configured. */
export class UnknownMcpServerError extends Error {
  override readonly name = 'UnknownMcpServerError';
  constructor(readonly serverId: number) {
    super(`Unknown MCP server id ${serverId}`);
  }
}

/** The MCP server could not be started or reached, or did not finish the handshake in time. */
export class McpConnectError extends Error {
  override readonly name = 'McpConnectError';
  constructor(
    readonly serverId: number,
    readonly serverName: string,
    readonly reason: string,
  ) {
    super(`Could not connect to MCP server '${serverName}': ${reason}`);
  }
}

/** A request to a connected MCP server failed or was not answered in time. */
export class McpRequestError extends Error {
  override readonly name = 'McpRequestError';
  constructor(
    readonly serverId: number,
    readonly serverName: string,
    readonly method: string,
    readonly reason: string,
  ) {
    super(`MCP server '${serverName}' failed ${method}: ${reason}`);
  }
}
