import { AgentExecutionContext } from '../harness/core/agent-execution-context';
import type { AgentEventListener } from '../harness/core/agent-event-listener';
import { AgentLoop } from '../harness/core/agent-loop';
import type { ChatRequest, ChatResponse, LlmModelConfig, StreamChunk } from '../harness/llm/chat-request';
import type { LlmAdapter } from '../harness/llm/llm-adapter';
import { BaseTool } from '../harness/tool/tool';
import { ToolDispatcher } from '../harness/tool/tool-dispatcher';
import { ToolRegistry } from '../harness/tool/tool-registry';

/** A workload: `rounds` model rounds of `calls` parallel tool calls each, then a text answer. */
export interface Workload {
  calls: number;
  rounds: number;
}

/** The `echo` tool of the comparison: answers its `text` argument. */
export class EchoTool extends BaseTool {
  getName(): string {
    return 'echo';
  }
  getDescription(): string {
    return 'answers its text';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
  }
  protected override executeImpl(argumentsJson: string): string {
    return (JSON.parse(argumentsJson) as { text: string }).text;
  }
}

/** A model in the same process that answers each round in one chunk: the workload's calls, then text. */
export class InProcessModel implements LlmAdapter {
  constructor(private readonly workload: Workload) {}

  chat(): Promise<ChatResponse> {
    throw new Error('streams only');
  }

  async *stream(request: ChatRequest): AsyncIterable<StreamChunk> {
    // Rounds so far: the assistant messages in the conversation.
    let round = 0;
    for (const message of request.messages) if (message.role === 'assistant') round++;
    if (round >= this.workload.rounds) {
      yield { contentDelta: 'done', finishReason: 'stop', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } };
      return;
    }
    const toolCallDeltas = Array.from({ length: this.workload.calls }, (_, index) => ({
      index,
      id: `call_${round}_${index}`,
      type: 'function' as const,
      function: { name: 'echo', arguments: `{"text":"${index}"}` },
    }));
    yield { toolCallDeltas, finishReason: 'tool_calls', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 } };
  }
}

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'bench' };

const SILENT: AgentEventListener = {
  onContentDelta: () => undefined,
  onToolCallStart: () => undefined,
  onToolCallResult: () => undefined,
  onMessageEnd: () => undefined,
  onError: () => undefined,
};

/**
 * Runs the workload once through `AgentLoop.execute`, with the dispatcher built as the server builds
 * it (`callTimeoutMs`: the server's `HARNESS_TOOL_TIMEOUT_MS`, one hour by default; `null`: none);
 * resolves with its wall time in ns.
 */
export async function runLoopOnce(workload: Workload, callTimeoutMs: number | null): Promise<number> {
  const registry = new ToolRegistry([new EchoTool()]);
  const loop = new AgentLoop({ llm: new InProcessModel(workload), dispatcher: new ToolDispatcher({ registry, callTimeoutMs }), registry });
  const context = new AgentExecutionContext({
    sessionId: 1,
    userId: 1,
    workspace: null,
    modelConfig: MODEL,
    maxRounds: workload.rounds + 1,
    messages: [{ role: 'user', content: 'go' }],
  });
  const started = process.hrtime.bigint();
  const outcome = await loop.execute(context, SILENT);
  const elapsed = Number(process.hrtime.bigint() - started);
  if (outcome.status !== 'completed') throw new Error(`the loop ended ${outcome.status}: ${outcome.error ?? ''}`);
  return elapsed;
}
