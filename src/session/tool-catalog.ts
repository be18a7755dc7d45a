import { McpToolAdapter } from '../harness/mcp/mcp-tool-adapter';
import type { Tool } from '../harness/tool/tool';
import { ASK_USER_QUESTIONS_TOOL, SERVER_ONLY_TOOLS } from '../harness/tool/tool-dispatcher';
import type { ToolRegistry } from '../harness/tool/tool-registry';
import type { SessionRecord } from './persistence/session-repository';
import type { SessionToolProvider } from './run/session-tool-provider';

/** One tool as `GET /api/tools` lists it: who it is, where it comes from, where it runs. */
export interface ToolCatalogEntry {
  name: string;
  source: 'builtin' | 'mcp';
  executor: 'server' | 'desktop' | 'mcp-server';
  serverId?: number;
  originalName?: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The tools a client can show: the built-in ones, plus a session's MCP tools. */
export class ToolCatalog {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly sessionTools: SessionToolProvider,
  ) {}

  async list(session: SessionRecord | null): Promise<ToolCatalogEntry[]> {
    const tools: Tool[] = [...this.registry.list()];
    if (session) tools.push(...(await this.sessionTools.forSession(session)).tools);
    return tools.map((tool) => describeTool(tool, session));
  }
}

function describeTool(tool: Tool, session: SessionRecord | null): ToolCatalogEntry {
  const common = { description: tool.getDescription(), inputSchema: tool.getInputSchema() };
  if (tool instanceof McpToolAdapter) {
    const ref = tool.getRef();
    return {
      name: tool.getName(),
      source: 'mcp',
      executor: session?.executionMode === 'LOCAL' ? 'desktop' : 'mcp-server',
      serverId: ref.serverId,
      originalName: ref.toolName,
      ...common,
    };
  }
  return { name: tool.getName(), source: 'builtin', executor: builtinExecutor(tool.getName(), session), ...common };
}

/** Where the dispatcher runs a built-in tool: on the desktop in LOCAL mode, except the server's own. */
function builtinExecutor(name: string, session: SessionRecord | null): 'server' | 'desktop' {
  if (session?.executionMode !== 'LOCAL') return 'server';
  return SERVER_ONLY_TOOLS.has(name) || name === ASK_USER_QUESTIONS_TOOL ? 'server' : 'desktop';
}
