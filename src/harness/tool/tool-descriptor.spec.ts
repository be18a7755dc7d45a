import { McpClientManager } from '../mcp/mcp-client-manager';
import { McpToolAdapter } from '../mcp/mcp-tool-adapter';
import type { McpToolRef } from '../mcp/mcp-tool-ref';
import { createBuiltinTools } from './impl/builtin-tools';
import { InMemoryTaskStore } from './impl/in-memory-task-store';
import { BaseTool } from './tool';

const REF: McpToolRef = { serverId: 7, serverName: 'docs', toolName: 'search', description: 'Searches', inputSchema: { type: 'object' } };

class PlainTool extends BaseTool {
  getName(): string {
    return 'plain';
  }
  getDescription(): string {
    return 'a tool that keeps the default descriptor';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
}

describe('ToolDescriptor', () => {
  describe('BaseTool', () => {
    it('describes a built-in tool that runs on the server', () => {
      expect(new PlainTool().getDescriptor()).toEqual({ name: 'plain', source: 'builtin', executor: 'server' });
    });

    it('gives every built-in tool its own name as a server tool, with a title and annotations', () => {
      for (const tool of createBuiltinTools({ taskStore: new InMemoryTaskStore(), shell: { enabled: false } })) {
        expect(tool.getDescriptor?.()).toEqual(
          expect.objectContaining({ name: tool.getName(), source: 'builtin', executor: 'server', title: expect.any(String), annotations: expect.any(Object) }),
        );
      }
    });

    it('declares what each built-in tool does to the world', () => {
      const tools = createBuiltinTools({ taskStore: new InMemoryTaskStore(), shell: { enabled: false } });
      const facts = Object.fromEntries(
        tools.map((tool) => {
          const { annotations, writesFiles, runsCommands, serverOnly } = tool.getDescriptor!();
          return [tool.getName(), { readOnly: annotations?.readOnlyHint === true, writesFiles: writesFiles === true, runsCommands: runsCommands === true, serverOnly: serverOnly === true }];
        }),
      );
      const readOnly = { readOnly: true, writesFiles: false, runsCommands: false, serverOnly: false };
      expect(facts).toEqual({
        read_file: readOnly,
        glob: readOnly,
        grep: readOnly,
        write_file: { readOnly: false, writesFiles: true, runsCommands: false, serverOnly: false },
        edit_file: { readOnly: false, writesFiles: true, runsCommands: false, serverOnly: false },
        shell: { readOnly: false, writesFiles: false, runsCommands: true, serverOnly: false },
        task_create: { readOnly: false, writesFiles: false, runsCommands: false, serverOnly: true },
        task_update: { readOnly: false, writesFiles: false, runsCommands: false, serverOnly: true },
        task_list: { readOnly: true, writesFiles: false, runsCommands: false, serverOnly: true },
        task_delete: { readOnly: false, writesFiles: false, runsCommands: false, serverOnly: true },
        ask_user_questions: readOnly,
      });
    });
  });

  describe('McpToolAdapter', () => {
    it("carries its server's title, annotations and trust", () => {
      const trusted = { ...REF, title: 'Search the docs', annotations: { readOnlyHint: true, openWorldHint: false }, trusted: true };
      expect(new McpToolAdapter(trusted, null).getDescriptor()).toEqual(
        expect.objectContaining({ title: 'Search the docs', annotations: { readOnlyHint: true, openWorldHint: false }, trusted: true }),
      );
    });

    it('runs on the MCP server when it has a client manager (CLOUD)', () => {
      const manager = new McpClientManager([]);
      expect(new McpToolAdapter(REF, manager).getDescriptor()).toEqual({
        name: 'mcp__docs__search',
        source: 'mcp',
        executor: 'mcp-server',
        serverId: 7,
        originalName: 'search',
        trusted: false,
      });
    });

    it('runs on the desktop when it has none (LOCAL)', () => {
      expect(new McpToolAdapter(REF, null).getDescriptor()).toEqual({
        name: 'mcp__docs__search',
        source: 'mcp',
        executor: 'desktop',
        serverId: 7,
        originalName: 'search',
        trusted: false,
      });
    });
  });
});
