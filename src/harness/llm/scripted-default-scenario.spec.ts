import type { ChatRequest, LlmModelConfig } from './chat-request';
import { DEFAULT_SCENARIO_MARKERS, defaultScenario } from './scripted-default-scenario';
import { parseScenario, ScriptedLlmAdapter } from './scripted-llm-adapter';
import { collectStream } from './testing/collect-stream';

const CONFIG: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'scripted' };

function firstMessage(sessionId: number, content: string): ChatRequest {
  return { sessionId, messages: [{ role: 'user', content }] };
}

describe('defaultScenario', () => {
  it('is a valid scenario, as LLM_SCRIPT would have to be', () => {
    expect(parseScenario(JSON.parse(JSON.stringify(defaultScenario())))).toEqual(defaultScenario());
  });

  it('returns a fresh copy each time, so a caller that changes its copy changes no other', () => {
    const first = defaultScenario();
    first.rounds.length = 0;
    expect(defaultScenario().rounds).not.toHaveLength(0);
  });

  describe('when a session starts without a marker', () => {
    it('greets and points at LLM_BASE_URL', async () => {
      const adapter = new ScriptedLlmAdapter(defaultScenario());
      const answer = await collectStream(adapter.stream(firstMessage(1, 'hello'), CONFIG));
      expect(answer.content).toContain('LLM_BASE_URL');
      expect(answer.toolCalls).toEqual([]);
    });
  });

  describe('when a session starts with a marker', () => {
    it.each([
      ['cloud', 'write_file'],
      ['restricted', 'write_file'],
      ['local', 'read_file'],
    ] as const)('answers the %s script (first call: %s)', async (marker, firstTool) => {
      const adapter = new ScriptedLlmAdapter(defaultScenario());
      const answer = await collectStream(adapter.stream(firstMessage(1, `${DEFAULT_SCENARIO_MARKERS[marker]} go`), CONFIG));
      expect(answer.toolCalls[0]?.function.name).toBe(firstTool);
    });
  });
});
