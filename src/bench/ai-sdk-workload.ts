import type { Workload } from './loop-workload';

type Ai = typeof import('ai');
type AiTest = typeof import('ai/test');

/** Runs the workload once through the AI SDK's `generateText` with its mock model; resolves with its wall time in ns. */
export async function runAiSdkOnce(workload: Workload): Promise<number> {
  const ai: Ai = require('ai');
  const { MockLanguageModelV3 }: AiTest = require('ai/test');
  let round = 0;
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const model = new MockLanguageModelV3({
    doGenerate: async () => {
      const current = round++;
      if (current >= workload.rounds) {
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
      }
      return {
        content: Array.from({ length: workload.calls }, (_, index) => ({
          type: 'tool-call' as const,
          toolCallId: `call_${current}_${index}`,
          toolName: 'echo',
          input: `{"text":"${index}"}`,
        })),
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      };
    },
  });
  const echo = ai.tool({
    description: 'answers its text',
    inputSchema: ai.jsonSchema<{ text: string }>({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }),
    execute: async ({ text }) => text,
  });
  const started = process.hrtime.bigint();
  const result = await ai.generateText({ model, tools: { echo }, prompt: 'go', stopWhen: ai.stepCountIs(workload.rounds + 1) });
  const elapsed = Number(process.hrtime.bigint() - started);
  if (result.text !== 'done') throw new Error(`generateText ended with '${result.text}' after ${result.steps.length} steps`);
  return elapsed;
}
