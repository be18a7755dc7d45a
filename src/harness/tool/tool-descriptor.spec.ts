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

    it('gives every built-in tool its own name as a server tool', () => {
      for (const tool of createBuiltinTools({ taskStore: new InMemoryTaskStore(), shell: { enabled: false } })) {
        expect(tool.getDescriptor?.()).toEqual({ name: tool.getName(), source: 'builtin', executor: 'server' });
      }
    });
  });

  describe('McpToolAdapter', () => {
    it('runs on the MCP server when it has a client manager (CLOUD)', () => {
      const manager = new McpClientManager([]);
      expect(new McpToolAdapter(REF, manager).getDescriptor()).toEqual({
        name: 'mcp__docs__search',
        source: 'mcp',
        executor: 'mcp-server',
        serverId: 7,
        originalName: 'search',
      });
    });

    it('runs on the desktop when it has none (LOCAL)', () => {
      expect(new McpToolAdapter(REF, null).getDescriptor()).toEqual({
        name: 'mcp__docs__search',
        source: 'mcp',
        executor: 'desktop',
        serverId: 7,
        originalName: 'search',
      });
    });
  });
});
