import type { LlmModelConfig } from '../llm/chat-request';
import { ScriptedLlmAdapter } from '../llm/scripted-llm-adapter';
import { ToolDispatcher } from '../tool/tool-dispatcher';
import { ToolRegistry } from '../tool/tool-registry';
import type { AgentEventListener } from './agent-event-listener';
import { AgentExecutionContext } from './agent-execution-context';
import { AgentLoop } from './agent-loop';

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };

describe('AgentLoop reading the model stream', () => {
  it("listens to the run's signal once for the whole stream, not once a chunk, and leaves no listener behind", async () => {
    const registry = new ToolRegistry([]);
    const answer = Array.from({ length: 150 }, (_, index) => `word${index}`).join(' ');
    const loop = new AgentLoop({
      // The scripted model streams the answer word by word: some 150 chunks.
      llm: new ScriptedLlmAdapter({ rounds: [{ content: answer }] }),
      dispatcher: new ToolDispatcher({ registry }),
      registry,
      logger: { warn: () => undefined },
    });
    const context = new AgentExecutionContext({
      sessionId: 5,
      userId: 1,
      executionMode: 'CLOUD',
      workspace: '/ws',
      permissionLevel: 'FULL',
      modelConfig: MODEL,
      messages: [{ role: 'user', content: 'go' }],
    });
    const deltas: string[] = [];
    const listener: AgentEventListener = {
      onContentDelta: (delta) => void deltas.push(delta),
      onToolCallStart: () => undefined,
      onToolCallResult: () => undefined,
      onMessageEnd: () => undefined,
      onError: (message) => {
        throw new Error(message);
      },
    };
    const abortListeners = (spy: jest.SpyInstance) => spy.mock.calls.filter(([type]) => type === 'abort').length;
    const added = jest.spyOn(context.signal, 'addEventListener');
    const removed = jest.spyOn(context.signal, 'removeEventListener');

    await loop.execute(context, listener);

    expect(deltas.length).toBeGreaterThan(100);
    expect(deltas.join('')).toBe(answer);
    expect(abortListeners(added)).toBe(1);
    expect(abortListeners(removed)).toBe(1);
  });
});
