import type { Tool } from '../../harness/tool/tool';
import type { ToolDescriptor } from '../../harness/tool/tool-descriptor';
import { ASK_USER_QUESTIONS_TOOL, SERVER_ONLY_TOOLS } from '../../harness/tool/tool-dispatcher';
import type { ToolRegistry } from '../../harness/tool/tool-registry';
import type { SessionRecord } from '../persistence/session-repository';
import type { SessionToolProvider } from './session-tool-provider';

/** One tool as `GET /api/tools` lists it: its descriptor, plus what a client needs to show it. */
export interface ToolCatalogEntry extends ToolDescriptor {
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
    return tools.map((tool) => ({
      ...forSession(describe(tool), session),
      description: tool.getDescription(),
      inputSchema: tool.getInputSchema(),
    }));
  }
}

function describe(tool: Tool): ToolDescriptor {
  return typeof tool.getDescriptor === 'function' ? tool.getDescriptor() : { name: tool.getName(), source: 'builtin', executor: 'server' };
}

/**
 * In a LOCAL session the dispatcher sends a built-in server tool to the desktop, except the
 * tools that always run on the server; the listing says where calls of this session run.
 */
function forSession(descriptor: ToolDescriptor, session: SessionRecord | null): ToolDescriptor {
  const runsOnDesktop =
    session?.executionMode === 'LOCAL' &&
    descriptor.executor === 'server' &&
    !SERVER_ONLY_TOOLS.has(descriptor.name) &&
    descriptor.name !== ASK_USER_QUESTIONS_TOOL;
  return runsOnDesktop ? { ...descriptor, executor: 'desktop' } : descriptor;
}
