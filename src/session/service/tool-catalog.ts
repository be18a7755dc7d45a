import type { Tool } from '../../harness/tool/tool';
import { describeTool } from '../../harness/tool/tool-capabilities';
import type { ToolDescriptor } from '../../harness/tool/tool-descriptor';
import type { ToolRegistry } from '../../harness/tool/tool-registry';
import { executorFor } from '../../harness/tool/tool-routing';
import type { SessionRecord } from '../persistence/session-repository';
import type { SessionToolProvider } from './session-tool-provider';

/** One tool as `GET /api/tools` lists it: its descriptor, plus what a client needs to show it. */
export interface ToolCatalogEntry extends ToolDescriptor {
  description: string;
  inputSchema: Record<string, unknown>;
}

/**
 * The tools a client can show: the built-in ones, plus a session's MCP tools. For a session, each
 * entry's `executor` says where that session's calls of it run (`executorFor`, the dispatcher's
 * own rule).
 */
export class ToolCatalog {
  constructor(
    private readonly registry: ToolRegistry,
    private readonly sessionTools: SessionToolProvider,
  ) {}

  async list(session: SessionRecord | null): Promise<ToolCatalogEntry[]> {
    const tools: Tool[] = [...this.registry.list()];
    if (session) tools.push(...(await this.sessionTools.forSession(session)).tools);
    return tools.map((tool) => {
      const descriptor = describeTool(tool);
      const executor = session ? executorFor(descriptor, descriptor.name, session.executionMode) : descriptor.executor;
      return { ...descriptor, executor, description: tool.getDescription(), inputSchema: tool.getInputSchema() };
    });
  }
}
