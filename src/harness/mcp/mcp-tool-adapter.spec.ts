import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { callTool } from '../tool/tool';
import { ToolCallContext } from '../tool/tool-call-context';
import { McpClientManager } from './mcp-client-manager';
import { McpToolAdapter } from './mcp-tool-adapter';
import { MCP_TOOL_NAME_SEPARATOR, mcpToolName, parseMcpToolName } from '../tool/mcp-tool-name';
import type { McpToolRef } from './mcp-tool-ref';
import { asToolOutput, outputText } from './testing/tool-output-text';

const DEMO_SERVER_JS = path.join(__dirname, '../../../build/dev/demo/mcp-demo-server.js');
const SESSION = 12;
const USER = 3;
const WORKSPACE = '/tmp/workspace';

function ref(overrides: Partial<McpToolRef> = {}): McpToolRef {
  return {
    serverId: 1,
    serverName: 'demo',
    toolName: 'echo',
    description: 'Returns the given text unchanged.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    ...overrides,
  };
}

describe('mcpToolName', () => {
  it('joins mcp, the server name and the tool name with the separator', () => {
    expect(MCP_TOOL_NAME_SEPARATOR).toBe('__');
    expect(mcpToolName('demo', 'echo')).toBe('mcp__demo__echo');
    expect(mcpToolName('web-search', 'run_query')).toBe('mcp__web-search__run_query');
  });
});

describe('McpToolAdapter', () => {
  describe('as a description of the tool', () => {
    const adapter = new McpToolAdapter(ref(), null);

    it('is named mcp__<server>__<tool> and exposes its ref', () => {
      expect(adapter.getName()).toBe('mcp__demo__echo');
      expect(adapter.getRef()).toEqual(ref());
    });

    it("offers the server's description and schema", () => {
      expect(adapter.getDescription()).toBe('Returns the given text unchanged.');
      expect(adapter.getInputSchema()).toEqual(ref().inputSchema);
      expect(adapter.getOutputSchema()).toBeNull();
    });

    it('describes a tool whose server gave no description', () => {
      expect(new McpToolAdapter(ref({ description: '' }), null).getDescription()).toBe("Tool 'echo' of MCP server 'demo'");
    });

    it.each<[string, object, Record<string, unknown>]>([
      ['adds missing properties', { type: 'object' }, { type: 'object', properties: {} }],
      ['adds a missing type', { properties: { a: { type: 'number' } } }, { type: 'object', properties: { a: { type: 'number' } } }],
      ['replaces a non-object schema', { type: 'string' }, { type: 'object', properties: {} }],
      ['replaces an array', [], { type: 'object', properties: {} }],
    ])('always offers an object schema: %s', (_case, inputSchema, expected) => {
      expect(new McpToolAdapter(ref({ inputSchema }), null).getInputSchema()).toEqual(expected);
    });
  });

  describe('without a client manager (the desktop runs the tool, LOCAL)', () => {
    const adapter = new McpToolAdapter(ref(), null);
    const message = "MCP tool 'mcp__demo__echo' runs on the desktop client, not on the server";
    const refusal = {
      kind: 'tool-output',
      parts: [{ type: 'text', text: JSON.stringify({ error: message }) }],
      isError: true,
      errorMessage: message,
    };

    it('refuses to run on the server with an error output, whatever the arity', async () => {
      await expect(adapter.execute('{"text":"x"}', SESSION, USER, WORKSPACE)).resolves.toEqual(refusal);
      await expect(adapter.execute('{"text":"x"}', SESSION, WORKSPACE)).resolves.toEqual(refusal);
      await expect(adapter.execute('{"text":"x"}', WORKSPACE)).resolves.toEqual(refusal);
      await expect(adapter.execute('{"text":"x"}')).resolves.toEqual(refusal);
    });

    it('gives the model the refusal text it always read', async () => {
      expect(outputText(await adapter.execute('{"text":"x"}'))).toBe(`{"error":"${message}"}`);
    });
  });

  describe('with a client manager (the server runs the tool, CLOUD)', () => {
    let manager: McpClientManager;
    beforeAll(() => {
      if (!existsSync(DEMO_SERVER_JS)) throw new Error(`${DEMO_SERVER_JS} is missing: run npm run build:dev first`);
      manager = new McpClientManager(
        [{ id: 1, name: 'demo', type: 'stdio', command: process.execPath, args: [DEMO_SERVER_JS], env: {} }],
        { callTimeoutMs: 5_000, connectTimeoutMs: 5_000 },
      );
    });
    afterAll(() => manager.closeAll());

    it("calls the tool through the session's client and returns its output", async () => {
      const adapter = new McpToolAdapter(ref(), manager);

      await expect(callTool(adapter, '{"text":"via adapter"}', SESSION, USER, WORKSPACE)).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'via adapter' }],
      });
      expect(outputText(await adapter.execute('{"text":"three args"}', SESSION, WORKSPACE))).toBe('three args');
    });

    it("passes the server's isError through as the outcome", async () => {
      const adapter = new McpToolAdapter(ref({ toolName: 'fail' }), manager);

      await expect(adapter.execute('{"reason":"no"}', SESSION, USER, WORKSPACE)).resolves.toEqual({
        kind: 'tool-output',
        parts: [{ type: 'text', text: 'no' }],
        isError: true,
        errorMessage: 'no',
      });
      const broken = asToolOutput(await adapter.execute('{broken', SESSION, USER, WORKSPACE));
      expect(broken.isError).toBe(true);
      expect(JSON.parse(outputText(broken)).error).toContain('not valid JSON');
      expect(broken.errorMessage).toContain('not valid JSON');
    });

    it("cancels the call when the tool call's signal fires", async () => {
      const adapter = new McpToolAdapter(ref({ toolName: 'slow' }), manager);
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('the run was cancelled')), 100);
      const startedAt = Date.now();

      const answer = await ToolCallContext.runScope({ callId: 'call_1', signal: controller.signal }, async () =>
        adapter.execute('{"ms":5000}', SESSION, USER, WORKSPACE),
      );

      expect(Date.now() - startedAt).toBeLessThan(1_000);
      expect(asToolOutput(answer).isError).toBe(true);
      expect(JSON.parse(outputText(answer))).toEqual({ error: "MCP tool call cancelled before 'slow' on MCP server 'demo' answered (the run was cancelled)" });
    });

    it('refuses to run without a session, since clients belong to sessions', async () => {
      const adapter = new McpToolAdapter(ref(), manager);
      const message = "MCP tool 'mcp__demo__echo' needs a session to run";
      const refusal = { kind: 'tool-output', parts: [{ type: 'text', text: JSON.stringify({ error: message }) }], isError: true, errorMessage: message };

      await expect(adapter.execute('{"text":"x"}', WORKSPACE)).resolves.toEqual(refusal);
      await expect(adapter.execute('{"text":"x"}')).resolves.toEqual(refusal);
      await expect(adapter.execute('{"text":"x"}', null, USER, WORKSPACE)).resolves.toEqual(refusal);
    });
  });
});

describe('parseMcpToolName', () => {
  it('reads the server and tool names back from the name the model sees', () => {
    expect(parseMcpToolName('mcp__demo__echo')).toEqual({ serverName: 'demo', toolName: 'echo' });
    expect(parseMcpToolName('mcp__demo__with__separators')).toEqual({ serverName: 'demo', toolName: 'with__separators' });
  });

  it.each(['read_file', 'mcp__demo', 'mcp____echo', 'mcp__demo__', 'xmcp__demo__echo'])('says %s is no MCP tool name', (name) => {
    expect(parseMcpToolName(name)).toBeUndefined();
  });
});
