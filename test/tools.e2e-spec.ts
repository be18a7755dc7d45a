import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';

interface ToolEntry {
  name: string;
  source: string;
  executor: string;
  serverId?: number;
  originalName?: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

const BUILTIN_TOOLS = [
  'ask_user_questions',
  'edit_file',
  'glob',
  'grep',
  'read_file',
  'shell',
  'task_create',
  'task_delete',
  'task_list',
  'task_update',
  'write_file',
];

const DEMO_TOOLS = ['crash', 'echo', 'fail', 'pid', 'slow', 'stats'];

describe('GET /api/tools', () => {
  let t: TestHarness;

  beforeAll(async () => {
    t = await startTestHarness({
      mcpDemo: true,
      // A server whose process dies at once: its session must still work, without its tools.
      extraMcpServers: [{ id: 2, name: 'broken', type: 'stdio', command: process.execPath, args: ['-e', 'process.exit(3)'] }],
    });
  });

  afterAll(async () => {
    await t.close();
  });

  it('lists the built-in tools, run by the server', async () => {
    const answer = await t.userA.get<ToolEntry[]>('/api/tools');
    expect(answer.status).toBe(200);
    expect(answer.body.map((tool) => tool.name).sort()).toEqual(BUILTIN_TOOLS);
    for (const tool of answer.body) {
      expect(tool).toEqual(
        expect.objectContaining({ source: 'builtin', executor: 'server', description: expect.stringMatching(/\S/), inputSchema: expect.objectContaining({ type: 'object' }) }),
      );
    }
  });

  it("adds a session's MCP tools from the demo server over stdio", async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [1] });
    const answer = await t.userA.get<ToolEntry[]>(`/api/tools?sessionId=${session.id}`);
    expect(answer.status).toBe(200);
    const mcp = answer.body.filter((tool) => tool.source === 'mcp');
    expect(mcp.map((tool) => tool.name).sort()).toEqual(DEMO_TOOLS.map((name) => `mcp__demo__${name}`));
    expect(mcp.find((tool) => tool.name === 'mcp__demo__echo')).toEqual({
      name: 'mcp__demo__echo',
      source: 'mcp',
      executor: 'mcp-server',
      serverId: 1,
      originalName: 'echo',
      title: 'Echo',
      // The demo server's hints are shown, and marked as coming from a server nobody vouched for.
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      trusted: false,
      description: 'Returns the given text unchanged.',
      inputSchema: expect.objectContaining({ type: 'object', properties: expect.objectContaining({ text: expect.any(Object) }) }),
    });
    expect(answer.body.filter((tool) => tool.source === 'builtin').map((tool) => tool.name).sort()).toEqual(BUILTIN_TOOLS);
  });

  it('says where a LOCAL session runs each tool: the desktop, except the server-only ones', async () => {
    const session = await createSession(t.userA, { executionMode: 'LOCAL', permissionLevel: 'FULL', mcpServers: [1] });
    const answer = await t.userA.get<ToolEntry[]>(`/api/tools?sessionId=${session.id}`);
    const mcp = answer.body.filter((tool) => tool.source === 'mcp');
    expect(mcp).toHaveLength(DEMO_TOOLS.length);
    expect(new Set(mcp.map((tool) => tool.executor))).toEqual(new Set(['desktop']));
    const executors = Object.fromEntries(answer.body.filter((tool) => tool.source === 'builtin').map((tool) => [tool.name, tool.executor]));
    expect(executors).toEqual({
      read_file: 'desktop',
      write_file: 'desktop',
      edit_file: 'desktop',
      glob: 'desktop',
      grep: 'desktop',
      shell: 'desktop',
      task_create: 'server',
      task_update: 'server',
      task_list: 'server',
      task_delete: 'server',
      ask_user_questions: 'server',
    });
  });

  it('lists no MCP tools for a session without MCP servers', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const answer = await t.userA.get<ToolEntry[]>(`/api/tools?sessionId=${session.id}`);
    expect(answer.body.map((tool) => tool.name).sort()).toEqual(BUILTIN_TOOLS);
  });

  it('offers the MCP tools to the model and runs them on the MCP server', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [1], tools: ['mcp__demo__echo', 'read_file'] });
    const client = await t.connect();
    t.provider.reset();
    t.provider.script(
      { toolCalls: [{ id: 'call_echo', name: 'mcp__demo__echo', arguments: { text: 'über the wire' } }] },
      { content: 'echoed' },
    );
    const executionId = await startRun(t.userA, session.id, 'echo something');
    await client.waitForRunEvent('message_end', executionId);
    // Only the session's allowed tools are offered.
    expect(t.provider.requests[0].body.tools?.map((tool) => tool.function.name).sort()).toEqual(['mcp__demo__echo', 'read_file']);
    const result = client.runEvents(executionId).find((event) => event.type === 'tool_call_result');
    expect(result?.data).toEqual(expect.objectContaining({ tool_call_id: 'call_echo', tool_name: 'mcp__demo__echo', status: 'success' }));
    expect(String(result?.data.result)).toContain('über the wire');
    expect(t.provider.requests[1].body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_echo', content: result?.data.result });
  });

  it('reports an MCP server that cannot start as an error event and runs on without its tools', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [1, 2] });
    const listed = await t.userA.get<ToolEntry[]>(`/api/tools?sessionId=${session.id}`);
    expect(listed.status).toBe(200);
    expect(listed.body.filter((tool) => tool.source === 'mcp').map((tool) => tool.name).sort()).toEqual(DEMO_TOOLS.map((name) => `mcp__demo__${name}`));

    const client = await t.connect();
    t.provider.reset();
    t.provider.script({ content: 'fine without it' });
    const executionId = await startRun(t.userA, session.id, 'go');
    const problem = await client.waitForRunEvent('error', executionId);
    expect(problem.data.message).toContain('MCP server 2');
    await client.waitForRunEvent('message_end', executionId);
    const offered = t.provider.requests[0].body.tools?.map((tool) => tool.function.name) ?? [];
    expect(offered).toEqual(expect.arrayContaining(['mcp__demo__echo', 'read_file']));
    expect(offered.some((name) => name.startsWith('mcp__broken__'))).toBe(false);
  });
});
