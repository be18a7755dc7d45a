import type { ChatMessage, LlmModelConfig, ToolCall } from '../llm/chat-request';
import { ScriptedLlmAdapter } from '../llm/scripted-llm-adapter';
import { BaseTool, type ToolCapabilities } from '../tool/tool';
import { ToolDispatcher } from '../tool/tool-dispatcher';
import { ToolRegistry } from '../tool/tool-registry';
import type { ToolResult } from '../tool/tool-result';
import type { AgentEventListener } from './agent-event-listener';
import { AgentExecutionContext } from './agent-execution-context';
import { AgentLoop, INTERRUPTED_TOOL_RESULT, type PendingRound } from './agent-loop';

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };

/** A tool that counts its runs; read-only or not, as it declares. */
class CountingTool extends BaseTool {
  readonly ran: string[] = [];
  constructor(
    private readonly name: string,
    private readonly readOnly: boolean,
  ) {
    super();
  }
  getName(): string {
    return this.name;
  }
  getDescription(): string {
    return 'counts';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  protected override capabilities(): ToolCapabilities {
    return this.readOnly ? { annotations: { readOnlyHint: true } } : {};
  }
  protected override async executeWithUser(argumentsJson: string): Promise<string> {
    const id = String((JSON.parse(argumentsJson) as { id: unknown }).id);
    this.ran.push(id);
    return `${this.name} ${id} ran`;
  }
}

function call(id: string, name: string): ToolCall {
  return { id, type: 'function', function: { name, arguments: JSON.stringify({ id }) } };
}

function success(callId: string, content: string): ToolResult {
  return { callId, status: 'success', content };
}

/**
 * Resumes a round of `calls` whose process stopped: `settled` had finished, `waited` held a wait
 * (here answered by running the call). Returns each call's tool message and what the tools ran.
 */
async function resume(calls: ToolCall[], settled: Record<string, string>, waited: string[]) {
  const look = new CountingTool('look', true);
  const change = new CountingTool('change', false);
  const registry = new ToolRegistry([look, change]);
  const loop = new AgentLoop({
    llm: new ScriptedLlmAdapter({ rounds: [{ content: 'done' }] }),
    dispatcher: new ToolDispatcher({ registry }),
    registry,
    logger: { warn: () => undefined },
  });
  const assistant: ChatMessage = { role: 'assistant', content: null, tool_calls: calls };
  const context = new AgentExecutionContext({
    sessionId: 5,
    userId: 1,
    executionMode: 'CLOUD',
    workspace: '/ws',
    permissionLevel: 'FULL',
    modelConfig: MODEL,
    messages: [{ role: 'user', content: 'go' }, assistant],
  });
  const round: PendingRound = {
    calls,
    settled: new Map(Object.entries(settled).map(([id, content]) => [id, success(id, content)])),
    announced: new Set(Object.keys(settled)),
    waited: new Set(waited),
  };
  const announced: string[] = [];
  const staged: string[] = [];
  const listener: AgentEventListener = {
    onContentDelta: () => undefined,
    onToolCallStart: () => undefined,
    onToolCallResult: (callId) => announced.push(callId),
    onMessageEnd: () => undefined,
    onError: () => undefined,
  };
  const outcome = await loop.resume(context, listener, { saveAssistantMessage: () => undefined, saveToolMessages: () => undefined, saveToolResult: (message) => void staged.push(String(message.tool_call_id)) }, round);
  const results = context.messages.filter((message) => message.role === 'tool').map((message) => [message.tool_call_id, message.content]);
  return { outcome, results, ran: { look: look.ran, change: change.ran }, announced, staged };
}

describe('AgentLoop.resume: the calls of the open round that have no result', () => {
  it('runs the calls that waited behind the waiting call: they never started', async () => {
    const { outcome, results, ran, announced } = await resume(
      [call('a', 'change'), call('b', 'change'), call('c', 'look'), call('d', 'change')],
      { a: 'change a ran' },
      ['b'],
    );
    expect(outcome.status).toBe('completed');
    expect(results).toEqual([
      ['a', 'change a ran'],
      ['b', 'change b ran'],
      ['c', 'look c ran'],
      ['d', 'change d ran'],
    ]);
    expect(ran).toEqual({ look: ['c'], change: ['b', 'd'] });
    // The finished call was announced before the stop; the others are announced now.
    expect(announced).toEqual(['b', 'c', 'd']);
  });

  it('does not run again a call that is not read-only whose turn had come: it gets the interrupted result', async () => {
    // b waits; a (not read-only, every call before it finished) may have been running at the stop.
    const { results, ran, staged } = await resume([call('a', 'change'), call('b', 'change'), call('c', 'change')], {}, ['b']);
    expect(results).toEqual([
      ['a', INTERRUPTED_TOOL_RESULT],
      ['b', 'change b ran'],
      ['c', 'change c ran'],
    ]);
    expect(ran.change).toEqual(['b', 'c']);
    // Each result is stored as it is settled, the interrupted one too.
    expect([...staged].sort()).toEqual(['a', 'b', 'c']);
  });

  it('runs a read-only call again, whether or not it had started: reading twice changes nothing', async () => {
    const { results, ran } = await resume([call('a', 'look'), call('b', 'look'), call('c', 'change')], { a: 'look a ran' }, ['c']);
    expect(results).toEqual([
      ['a', 'look a ran'],
      ['b', 'look b ran'],
      ['c', 'change c ran'],
    ]);
    expect(ran.look).toEqual(['b']);
  });
});
