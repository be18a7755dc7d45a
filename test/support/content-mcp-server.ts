import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';
import type { McpServerConfig } from '../../src/harness/mcp/mcp-server-config';

/** The compiled content MCP server (`src/demo/mcp-content-server.ts`); tests run it as a real process. */
export const CONTENT_MCP_SERVER = path.resolve(__dirname, '../../build/dev/demo/mcp-content-server.js');
const CONTENT_MCP_SERVER_TS = path.resolve(__dirname, '../../src/demo/mcp-content-server.ts');

/** Every tool the content server offers. */
export const CONTENT_TOOLS = ['annotated', 'audio', 'blob', 'fail', 'image', 'large_text', 'link', 'pixel', 'structured', 'text', 'text_resource'];

/** Fails early on a missing or stale build: a child process runs the compiled server, not the source. */
export function requireBuiltContentMcpServer(): void {
  if (!existsSync(CONTENT_MCP_SERVER)) throw new Error(`${CONTENT_MCP_SERVER} is missing: run npm run build:dev first`);
  if (statSync(CONTENT_MCP_SERVER).mtimeMs < statSync(CONTENT_MCP_SERVER_TS).mtimeMs) {
    throw new Error(`${CONTENT_MCP_SERVER} is older than its source: run npm run build:dev first`);
  }
}

/**
 * The content server as an MCP config entry (stdio), for `McpClientManager` or a whole-server
 * test's `extraMcpServers`; its tools are then `mcp__<name>__<tool>`.
 */
export function contentMcpServerConfig(id = 3, name = 'content'): McpServerConfig {
  return { id, name, type: 'stdio', command: process.execPath, args: [CONTENT_MCP_SERVER], env: {} };
}
