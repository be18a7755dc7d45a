import type { LlmModelConfig } from '../llm/chat-request';
import { ScriptedLlmAdapter } from '../llm/scripted-llm-adapter';
import { BaseTool } from '../tool/tool';
import { ToolDispatcher } from '../tool/tool-dispatcher';
import type { ToolInvocation } from '../tool/tool-invocation';
import { ToolRegistry } from '../tool/tool-registry';
import type { ToolResult, ToolResultMeta } from '../tool/tool-result';
import type { AgentEventListener } from './agent-event-listener';
import { AgentExecutionContext } from './agent-execution-context';
import { AgentLoop } from './agent-loop';

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };

class EchoTool extends BaseTool {
  getName(): string {
    return 'echo';
  }
  getDescription(): string {
    return 'echoes';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object' };
  }
  protected override executeImpl(argumentsJson: string): string {
    return argumentsJson;
  }
  protected override executeWithUser(argumentsJson: string): string {
    return argumentsJson;
  }
}

class ThrowingTool extends EchoTool {
  override getName(): string {
    return 'explode';
  }
  protected override executeWithUser(): string {
    throw new Error('kaboom');
  }
}

/** A dispatcher whose legacy entry must not be used by the loop; it records the invocations it got. */
class ContractOnlyDispatcher extends ToolDispatcher {
  readonly invocations: ToolInvocation[] = [];
  readonly results: ToolResult[] = [];
  override dispatch(): Promise<string> {
    throw new Error('the agent loop used the legacy dispatch entry');
  }
  override async dispatchInvocation(invocation: ToolInvocation): Promise<ToolResult> {
    this.invocations.push(invocation);
    const result = await super.dispatchInvocation(invocation);
    this.results.push(result);
    return result;
  }
}

class MetaListener implements AgentEventListener {
  readonly results: Array<[string, string, ToolResultMeta | undefined]> = [];
  onContentDelta(): void {}
  onToolCallStart(): void {}
  onToolCallResult(toolCallId: string, result: string, meta?: ToolResultMeta): void {
    this.results.push([toolCallId, result, meta]);
  }
  onMessageEnd(): void {}
  onError(): void {}
}

function setup(toolCalls: Array<{ id: string; name: string; arguments: unknown }>, allowedTools: string[] | null = null) {
  const registry = new ToolRegistry([new EchoTool(), new ThrowingTool()]);
  const dispatcher = new ContractOnlyDispatcher({ registry });
  const llm = new ScriptedLlmAdapter({ rounds: [{ toolCalls }, { content: 'done' }] });
  const loop = new AgentLoop({ llm, dispatcher, registry, logger: { warn: () => undefined } });
  const context = new AgentExecutionContext({
    sessionId: 5,
    userId: 2,
    executionUserId: 3,
    executionMode: 'CLOUD',
    workspace: '/ws',
    permissionLevel: 'SMART',
    modelConfig: MODEL,
    allowedTools,
    messages: [{ role: 'user', content: 'go' }],
  });
  const listener = new MetaListener();
  return { dispatcher, loop, context, listener };
}

describe('AgentLoop and the tool contract', () => {
  it('dispatches every call as one invocation carrying the run context, never through the legacy entry', async () => {
    const { dispatcher, loop, context, listener } = setup([{ id: 'a', name: 'echo', arguments: { x: 1 } }]);
    const outcome = await loop.execute(context, listener);
    expect(outcome.status).toBe('completed');
    expect(dispatcher.invocations).toEqual([
      {
        callId: 'a',
        toolName: 'echo',
        argumentsJson: '{"x":1}',
        executionMode: 'CLOUD',
        sessionId: 5,
        userId: 2,
        executionUserId: 3,
        workspace: '/ws',
        permissionLevel: 'SMART',
        modelConfig: MODEL,
        sessionTools: [],
        executionId: context.executionId,
        signal: context.signal,
        onProgress: expect.any(Function),
      },
    ]);
  });

  it('gives the model the content of each result, unchanged', async () => {
    const { loop, context, listener } = setup([
      { id: 'a', name: 'echo', arguments: '{"error":"as data"}' },
      { id: 'b', name: 'explode', arguments: {} },
    ]);
    await loop.execute(context, listener);
    const toolMessages = context.messages.filter((message) => message.role === 'tool');
    expect(toolMessages.map((message) => [message.tool_call_id, message.content])).toEqual([
      ['a', '{"error":"as data"}'],
      ['b', 'Tool execution failed: kaboom'],
    ]);
  });
});

describe('AgentLoop result meta', () => {
  it('hands each listener the status, message and duration the dispatcher decided', async () => {
    const { dispatcher, loop, context, listener } = setup([
      { id: 'a', name: 'echo', arguments: { fine: true } },
      { id: 'b', name: 'echo', arguments: '{"error":"reported by the tool"}' },
      { id: 'c', name: 'explode', arguments: {} },
      { id: 'd', name: 'no_such_tool', arguments: {} },
    ]);
    await loop.execute(context, listener);
    expect(listener.results.map(([id, content, meta]) => [id, content, meta?.status, meta?.errorMessage])).toEqual([
      ['a', '{"fine":true}', 'success', undefined],
      ['b', '{"error":"reported by the tool"}', 'error', 'reported by the tool'],
      ['c', 'Tool execution failed: kaboom', 'error', 'kaboom'],
      ['d', 'Tool execution failed: Unknown tool: no_such_tool', 'error', 'Unknown tool: no_such_tool'],
    ]);
    // the meta is the dispatcher's result, not a second guess
    // (calls finish in any order; the listener hears them in call order)
    const byCall = new Map(dispatcher.results.map((result) => [result.callId, result.durationMs]));
    expect(listener.results.map(([id, , meta]) => meta?.durationMs)).toEqual(listener.results.map(([id]) => byCall.get(id)));
  });

  it('refuses a tool outside the allowed set with an error result that took no time', async () => {
    const { dispatcher, loop, context, listener } = setup([{ id: 'a', name: 'explode', arguments: {} }], ['echo']);
    await loop.execute(context, listener);
    expect(dispatcher.invocations).toHaveLength(0);
    expect(listener.results).toEqual([
      [
        'a',
        "Tool execution failed: tool 'explode' is not in the allowed tool set",
        { status: 'error', errorMessage: "tool 'explode' is not in the allowed tool set", durationMs: 0 },
      ],
    ]);
  });

  it('marks the tool messages of failed calls for providers that can say so, content unchanged', async () => {
    const { loop, context, listener } = setup([
      { id: 'a', name: 'echo', arguments: {} },
      { id: 'b', name: 'explode', arguments: {} },
    ]);
    await loop.execute(context, listener);
    const toolMessages = context.messages.filter((message) => message.role === 'tool');
    expect(toolMessages.map((message) => [message.content, message.is_error])).toEqual([
      ['{}', undefined],
      ['Tool execution failed: kaboom', true],
    ]);
  });
});
