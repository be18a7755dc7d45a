import * as fs from 'node:fs';
import * as path from 'node:path';
import { createSession, MCP_DEMO_SERVER, startRun, startTestHarness, TOKEN_B, type TestHarness } from './support/test-harness';
import type { WsEvent, WsTestClient } from './support/ws-test-client';

/** The tool messages of the n-th request the model received. */
async function toolMessagesOf(t: TestHarness, request: number): Promise<Array<{ tool_call_id?: string; content?: unknown }>> {
  const received = await t.provider.waitForRequest(request);
  return received.body.messages.filter((message) => message.role === 'tool');
}

describe('one approval policy in CLOUD mode', () => {
  let t: TestHarness;

  afterEach(async () => {
    await t.close();
  });

  describe('at READ_ONLY', () => {
    beforeEach(async () => {
      t = await startTestHarness();
    });

    it('refuses a file change with an error result that says why, and leaves the workspace untouched', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'READ_ONLY', workspace: 'ro' });
      const client = await t.connect();
      t.provider.script(
        {
          toolCalls: [
            { id: 'call_write', name: 'write_file', arguments: { path: 'a.txt', content: 'changed' } },
            { id: 'call_glob', name: 'glob', arguments: { pattern: '*' } },
          ],
        },
        { content: 'I could not write.' },
      );
      const executionId = await startRun(t.userA, session.id, 'Write a.txt');
      await client.waitForRunEvent('message_end', executionId);

      const results = client.events.filter((event) => event.type === 'tool_call_result' && event.data.executionId === executionId);
      expect(results.map((event) => [event.data.tool_call_id, event.data.status])).toEqual([
        ['call_write', 'error'],
        ['call_glob', 'success'],
      ]);
      const [write] = await toolMessagesOf(t, 2);
      expect(JSON.parse(String(write.content))).toEqual({ error: expect.stringMatching(/'write_file' changes files, and this session is READ_ONLY/) });
      expect(fs.existsSync(path.join(t.workspaceRoot, 'user-1', 'ro', 'a.txt'))).toBe(false);
      expect(client.events.some((event) => event.type === 'approval_request')).toBe(false);
    });
  });

  describe('at READ_WRITE, a shell command', () => {
    let client: WsTestClient;
    let sessionId: number;

    beforeEach(async () => {
      t = await startTestHarness({ env: { HARNESS_CLOUD_SHELL: 'on', HARNESS_SHELL_ISOLATION: 'none' } });
      sessionId = (await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'READ_WRITE', workspace: 'rw' })).id;
      client = await t.connect();
    });

    const scriptShell = (command: string): void =>
      t.provider.script({ toolCalls: [{ id: 'call_shell', name: 'shell', arguments: { command } }] }, { content: 'finished' });

    const approvalRequest = (executionId: string): Promise<WsEvent> =>
      client.waitFor((event) => event.type === 'approval_request' && event.data.executionId === executionId);

    it('runs only once the owner approves it', async () => {
      scriptShell('echo approved-run > proof.txt');
      const executionId = await startRun(t.userA, sessionId, 'Run it');
      const request = await approvalRequest(executionId);
      expect(request.sessionId).toBe(sessionId);
      expect(request.data).toEqual({
        requestId: expect.any(String),
        toolCallId: 'call_shell',
        toolName: 'shell',
        arguments: JSON.stringify({ command: 'echo approved-run > proof.txt' }),
        reason: 'Shell commands need approval at READ_WRITE',
        expiresAt: expect.any(String),
        executionId,
      });
      const proof = path.join(t.workspaceRoot, 'user-1', 'rw', 'proof.txt');
      expect(fs.existsSync(proof)).toBe(false);

      client.send({ type: 'approval_response', sessionId, requestId: request.data.requestId, approved: true });
      await client.waitForRunEvent('message_end', executionId);
      expect(fs.readFileSync(proof, 'utf8')).toBe('approved-run\n');
      const resolved = client.events.find((event) => event.type === 'approval_resolved');
      expect(resolved?.data).toEqual(expect.objectContaining({ requestId: request.data.requestId, outcome: 'approved' }));
      const result = client.events.find((event) => event.type === 'tool_call_result' && event.data.tool_call_id === 'call_shell');
      expect(result?.data.status).toBe('success');
    });

    it('gives the model an error result when the owner denies it, and runs nothing', async () => {
      scriptShell('echo denied-run > proof.txt');
      const executionId = await startRun(t.userA, sessionId, 'Run it');
      const request = await approvalRequest(executionId);
      client.send({ type: 'approval_response', sessionId, requestId: request.data.requestId, approved: false, message: 'not today' });
      await client.waitForRunEvent('message_end', executionId);
      const [shell] = await toolMessagesOf(t, 2);
      expect(JSON.parse(String(shell.content))).toEqual({ error: "The user denied the call to 'shell': not today" });
      expect(fs.existsSync(path.join(t.workspaceRoot, 'user-1', 'rw', 'proof.txt'))).toBe(false);
    });

    it('changes nothing on a forged answer, and says so in an error event', async () => {
      scriptShell('echo forged > proof.txt');
      const other = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      const intruder = await t.connect(TOKEN_B);
      const executionId = await startRun(t.userA, sessionId, 'Run it');
      const request = await approvalRequest(executionId);
      const requestId = request.data.requestId;

      const refused = async (sender: WsTestClient, frame: Record<string, unknown>): Promise<string> => {
        const since = sender.mark();
        sender.send({ type: 'approval_response', approved: true, ...frame });
        const error = await sender.waitFor((event) => event.type === 'error', { since });
        expect(error.data.final).toBe(false);
        return String(error.data.message);
      };
      // Another user, even naming the right session and request.
      expect(await refused(intruder, { sessionId, requestId })).toMatch(/not found/);
      // Another session of the owner.
      expect(await refused(client, { sessionId: other.id, requestId })).toMatch(/No pending approval request/);
      // An unknown request.
      expect(await refused(client, { sessionId, requestId: 'made-up' })).toMatch(/No pending approval request/);
      // The right request with other arguments.
      expect(await refused(client, { sessionId, requestId, arguments: { command: 'rm -rf ~' } })).toMatch(/cannot change a call/);

      expect(client.events.some((event) => event.type === 'approval_resolved')).toBe(false);
      expect(fs.existsSync(path.join(t.workspaceRoot, 'user-1', 'rw', 'proof.txt'))).toBe(false);
      // The owner's own answer still counts.
      client.send({ type: 'approval_response', sessionId, requestId, approved: false });
      await client.waitForRunEvent('message_end', executionId);
      expect(fs.existsSync(path.join(t.workspaceRoot, 'user-1', 'rw', 'proof.txt'))).toBe(false);
    });
  });

  describe('with a trusted and an untrusted MCP server whose tools are read-only', () => {
    beforeEach(async () => {
      t = await startTestHarness({
        mcpDemo: true,
        extraMcpServers: [{ id: 2, name: 'vetted', type: 'stdio', command: process.execPath, args: [MCP_DEMO_SERVER], env: {}, trusted: true }],
      });
    });

    it('lists both with their hints, and runs only the trusted one unasked at READ_WRITE', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'READ_WRITE', mcpServers: [1, 2] });
      const tools = await t.userA.get<Array<Record<string, unknown>>>(`/api/tools?sessionId=${session.id}`);
      const echo = (name: string) => tools.body.find((tool) => tool.name === name);
      expect(echo('mcp__vetted__echo')).toEqual(expect.objectContaining({ title: 'Echo', annotations: expect.objectContaining({ readOnlyHint: true }), trusted: true }));
      expect(echo('mcp__demo__echo')).toEqual(expect.objectContaining({ annotations: expect.objectContaining({ readOnlyHint: true }), trusted: false }));
      expect(tools.body.find((tool) => tool.name === 'read_file')).toEqual(
        expect.objectContaining({ title: 'Read file', annotations: expect.objectContaining({ readOnlyHint: true }) }),
      );

      const client = await t.connect();
      t.provider.script(
        {
          toolCalls: [
            { id: 'call_vetted', name: 'mcp__vetted__echo', arguments: { text: 'from the trusted server' } },
            { id: 'call_demo', name: 'mcp__demo__echo', arguments: { text: 'from the untrusted server' } },
          ],
        },
        { content: 'done' },
      );
      const executionId = await startRun(t.userA, session.id, 'Echo twice');
      const request = await client.waitFor((event) => event.type === 'approval_request' && event.data.executionId === executionId);
      expect(request.data).toEqual(expect.objectContaining({ toolName: 'mcp__demo__echo', reason: 'MCP tools need approval at READ_WRITE' }));
      // The trusted server's call ran without a request; the untrusted one waits for its answer.
      const vetted = await client.waitFor((event) => event.type === 'tool_call_result' && event.data.tool_call_id === 'call_vetted');
      expect(client.events.some((event) => event.type === 'tool_call_result' && event.data.tool_call_id === 'call_demo')).toBe(false);
      expect(vetted.data).toEqual(expect.objectContaining({ status: 'success', result: 'from the trusted server' }));

      client.send({ type: 'approval_response', sessionId: session.id, requestId: request.data.requestId, approved: true });
      await client.waitForRunEvent('message_end', executionId);
      expect(client.events.filter((event) => event.type === 'approval_request')).toHaveLength(1);
      const [, demo] = await toolMessagesOf(t, 2);
      expect(demo.content).toBe('from the untrusted server');
    });
  });
});
