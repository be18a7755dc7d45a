import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApprovalRequests, type ApprovalChannel } from './approval-requests';
import { WriteFileTool } from './impl/write-file-tool';
import { BaseTool, type ToolCapabilities } from './tool';
import { ToolDispatcher } from './tool-dispatcher';
import type { ToolInvocation } from './tool-invocation';
import { ToolRegistry } from './tool-registry';

const OWNER = 1;
const SESSION = 7;

/** Stands for a command runner: it declares that it runs commands, and counts its runs. */
class CommandTool extends BaseTool {
  runs = 0;
  getName(): string {
    return 'shell';
  }
  getDescription(): string {
    return 'runs a command';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  protected override capabilities(): ToolCapabilities {
    return { runsCommands: true, annotations: { readOnlyHint: false, destructiveHint: true } };
  }
  protected override executeWithUser(): string {
    this.runs += 1;
    return JSON.stringify({ exit_code: 0, stdout: 'ran' });
  }
}

class Channel implements ApprovalChannel {
  readonly requests: Array<Record<string, unknown>> = [];
  onRequest: (data: Record<string, unknown>) => void = () => undefined;
  hasConnection(): boolean {
    return true;
  }
  sendToSession(_sessionId: number, type: string, data: Record<string, unknown>): number {
    if (type === 'approval_request') {
      this.requests.push(data);
      setImmediate(() => this.onRequest(data));
    }
    return 1;
  }
}

function setup(level: string) {
  const workspace = mkdtempSync(path.join(tmpdir(), 'harness-approvals-'));
  const command = new CommandTool();
  const channel = new Channel();
  const approvals = new ApprovalRequests(channel);
  const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([command, new WriteFileTool()]), approvals });
  const invocation = (toolName: string, argumentsJson: string): ToolInvocation => ({
    callId: 'c1',
    toolName,
    argumentsJson,
    executionMode: 'CLOUD',
    sessionId: SESSION,
    userId: OWNER,
    executionUserId: null,
    workspace,
    permissionLevel: level,
    modelConfig: null,
    sessionTools: null,
  });
  return { workspace, command, channel, approvals, dispatcher, invocation };
}

describe('ToolDispatcher in CLOUD mode, under the approval policy', () => {
  const cleanup: string[] = [];
  afterEach(() => {
    for (const dir of cleanup.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a file change at READ_ONLY, saying why, and leaves the file untouched', async () => {
    const { workspace, dispatcher, invocation } = setup('READ_ONLY');
    cleanup.push(workspace);
    writeFileSync(path.join(workspace, 'a.txt'), 'before');
    const result = await dispatcher.dispatchInvocation(invocation('write_file', '{"path":"a.txt","content":"after"}'));
    expect(result.status).toBe('error');
    expect(result.errorMessage).toContain('READ_ONLY');
    expect(JSON.parse(result.content)).toEqual({ error: expect.stringContaining("'write_file' changes files") });
    expect(readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('before');
  });

  it('writes at READ_WRITE without asking', async () => {
    const { workspace, channel, dispatcher, invocation } = setup('READ_WRITE');
    cleanup.push(workspace);
    const result = await dispatcher.dispatchInvocation(invocation('write_file', '{"path":"a.txt","content":"after"}'));
    expect(result.status).toBe('success');
    expect(channel.requests).toEqual([]);
    expect(readFileSync(path.join(workspace, 'a.txt'), 'utf8')).toBe('after');
  });

  it('asks before a command at READ_WRITE and runs it once approved', async () => {
    const { workspace, command, channel, approvals, dispatcher, invocation } = setup('READ_WRITE');
    cleanup.push(workspace);
    channel.onRequest = (data) => approvals.answer({ userId: OWNER, sessionId: SESSION, requestId: String(data.requestId), approved: true });
    const result = await dispatcher.dispatchInvocation(invocation('shell', '{"command":"ls"}'));
    expect(channel.requests).toEqual([expect.objectContaining({ toolCallId: 'c1', toolName: 'shell', arguments: '{"command":"ls"}', reason: 'Shell commands need approval at READ_WRITE' })]);
    expect(result).toEqual(expect.objectContaining({ status: 'success', content: '{"exit_code":0,"stdout":"ran"}' }));
    expect(command.runs).toBe(1);
  });

  it('gives the model an error result naming the denial, and runs nothing', async () => {
    const { workspace, command, channel, approvals, dispatcher, invocation } = setup('READ_WRITE');
    cleanup.push(workspace);
    channel.onRequest = (data) =>
      approvals.answer({ userId: OWNER, sessionId: SESSION, requestId: String(data.requestId), approved: false, message: 'not on my machine' });
    const result = await dispatcher.dispatchInvocation(invocation('shell', '{"command":"rm -rf /"}'));
    expect(result.status).toBe('error');
    expect(JSON.parse(result.content)).toEqual({ error: "The user denied the call to 'shell': not on my machine" });
    expect(command.runs).toBe(0);
  });

  it('withdraws the request and runs nothing when the run is cancelled while it waits', async () => {
    const { workspace, command, channel, dispatcher, invocation } = setup('READ_WRITE');
    cleanup.push(workspace);
    const controller = new AbortController();
    channel.onRequest = () => controller.abort();
    const result = await dispatcher.dispatchInvocation({ ...invocation('shell', '{"command":"ls"}'), signal: controller.signal });
    expect(result.status).toBe('error');
    expect(command.runs).toBe(0);
  });

  it('refuses, without a channel to ask on, with a result that says so', async () => {
    const { workspace, command, invocation } = setup('READ_WRITE');
    cleanup.push(workspace);
    const dispatcher = new ToolDispatcher({ registry: new ToolRegistry([command]) });
    const result = await dispatcher.dispatchInvocation(invocation('shell', '{"command":"ls"}'));
    expect(result.status).toBe('error');
    expect(result.errorMessage).toContain('no way to ask');
    expect(command.runs).toBe(0);
  });

  it('reads the level stored for the session now over the one the run started with', async () => {
    const { workspace, command, channel, invocation } = setup('FULL');
    cleanup.push(workspace);
    const dispatcher = new ToolDispatcher({
      registry: new ToolRegistry([command]),
      approvals: new ApprovalRequests(channel),
      permissionLookup: { getPermissionLevel: () => 'READ_ONLY' },
    });
    const result = await dispatcher.dispatchInvocation(invocation('shell', '{"command":"ls"}'));
    expect(result.errorMessage).toContain('READ_ONLY');
    expect(command.runs).toBe(0);
  });

  it('says how calls may overlap: read-only ones share, others have the round to themselves', () => {
    const { workspace, dispatcher, invocation } = setup('FULL');
    cleanup.push(workspace);
    expect(dispatcher.concurrencyOf(invocation('shell', '{}'))).toBe('exclusive');
    expect(dispatcher.concurrencyOf(invocation('write_file', '{}'))).toBe('exclusive');
    expect(dispatcher.concurrencyOf(invocation('unknown_tool', '{}'))).toBe('shared');
  });
});
