import type { McpClientManager } from '../../harness/mcp/mcp-client-manager';
import { McpToolAdapter } from '../../harness/mcp/mcp-tool-adapter';
import type { Tool } from '../../harness/tool/tool';
import type { SessionRecord } from '../persistence/session-repository';

/** A session's own tools and the servers that could not provide theirs. */
export interface SessionTools {
  tools: Tool[];
  problems: string[];
}

/**
 * Builds the MCP tools of a session from the servers it names. In CLOUD mode the adapters call
 * the MCP servers through the client manager; in LOCAL mode they stand for tools the desktop runs
 * (no client manager), so a call is sent to the desktop client.
 */
export class SessionToolProvider {
  constructor(private readonly mcp: McpClientManager | null) {}

  /**
   * Keeps the session's MCP clients open (see `McpClientManager.retain`) until the returned
   * function is called: a run holds them from its start to its end.
   */
  hold(session: SessionRecord): () => void {
    return this.mcp && session.mcpServers.length > 0 ? this.mcp.retain(session.id) : () => undefined;
  }

  /** Closes the session's MCP clients, stopping the stdio servers they started (a deleted session). */
  async close(sessionId: number): Promise<void> {
    await this.mcp?.closeSession(sessionId);
  }

  async forSession(session: SessionRecord): Promise<SessionTools> {
    const tools: Tool[] = [];
    const problems: string[] = [];
    if (!this.mcp || session.mcpServers.length === 0) return { tools, problems };
    const manager = this.mcp;
    const listed = await Promise.allSettled(session.mcpServers.map((serverId) => manager.listTools(session.id, serverId)));
    listed.forEach((outcome, index) => {
      if (outcome.status === 'rejected') {
        const reason = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
        problems.push(`MCP server ${session.mcpServers[index]} is unavailable: ${reason}`);
        return;
      }
      for (const ref of outcome.value) {
        tools.push(new McpToolAdapter(ref, session.executionMode === 'CLOUD' ? manager : null));
      }
    });
    return { tools, problems };
  }
}
