import type { ChatMessage, LlmModelConfig } from '../llm/chat-request';
import { AgentExecutionContext, DEFAULT_MAX_ROUNDS } from './agent-execution-context';

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'm' };

describe('AgentExecutionContext', () => {
  it('starts the conversation with the system prompt and a copy of the history', () => {
    const history: ChatMessage[] = [{ role: 'user', content: 'hi' }];
    const context = new AgentExecutionContext({ sessionId: 1, modelConfig: MODEL, systemPrompt: 'Be brief.', messages: history });

    context.addToolResult('c1', 'echo', 'result');

    expect(context.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
      { role: 'tool', tool_call_id: 'c1', name: 'echo', content: 'result' },
    ]);
    expect(history).toHaveLength(1);
  });

  it('has defaults for a plain cloud run', () => {
    const a = new AgentExecutionContext({ sessionId: null, modelConfig: MODEL });
    const b = new AgentExecutionContext({ sessionId: null, modelConfig: MODEL });

    expect(a.executionMode).toBe('CLOUD');
    expect(a.maxRounds).toBe(DEFAULT_MAX_ROUNDS);
    expect(a.messages).toEqual([]);
    expect([a.userId, a.executionUserId, a.workspace, a.permissionLevel, a.allowedTools]).toEqual([null, null, null, null, null]);
    expect(a.executionId).not.toBe(b.executionId);
  });

  it('allows every tool without an allowed set, and only the listed ones with one', () => {
    const open = new AgentExecutionContext({ sessionId: 1, modelConfig: MODEL });
    const closed = new AgentExecutionContext({ sessionId: 1, modelConfig: MODEL, allowedTools: ['read_file'] });

    expect(open.isToolAllowed('anything')).toBe(true);
    expect(closed.isToolAllowed('read_file')).toBe(true);
    expect(closed.isToolAllowed('shell')).toBe(false);
    expect(closed.isToolAllowed('__proto__')).toBe(false);
  });

  it('cancels once, through its signal', () => {
    const context = new AgentExecutionContext({ sessionId: 1, modelConfig: MODEL });
    let aborts = 0;
    context.signal.addEventListener('abort', () => aborts++);

    expect(context.isCancelled).toBe(false);
    context.cancel();
    context.cancel();

    expect(context.isCancelled).toBe(true);
    expect(context.signal.aborted).toBe(true);
    expect(aborts).toBe(1);
  });

  it.each([0, -1, 2.5, Number.NaN])('refuses maxRounds %p', (maxRounds) => {
    expect(() => new AgentExecutionContext({ sessionId: 1, modelConfig: MODEL, maxRounds })).toThrow(RangeError);
  });
});
