import type { LlmModelConfig } from '../llm/chat-request';
import { DangerAssessor, type DangerClassifierModel } from './danger-assessor';

const MODEL: LlmModelConfig = { protocol: 'scripted', baseUrl: null, apiKey: null, model: 'classifier' };

function answering(answer: string): DangerClassifierModel & { prompts: string[] } {
  const prompts: string[] = [];
  return {
    prompts,
    complete: async (prompt) => {
      prompts.push(prompt);
      return answer;
    },
  };
}

describe('DangerAssessor', () => {
  it('passes the command to the model and reads its verdict', async () => {
    const model = answering('{"dangerous": false, "reason": "only lists files"}');
    const verdict = await new DangerAssessor(model).assess('ls -la', MODEL);
    expect(verdict).toEqual({ dangerous: false, reason: 'only lists files' });
    expect(model.prompts[0]).toContain('ls -la');
  });

  it('reads a verdict wrapped in prose or a code fence', async () => {
    const verdict = await new DangerAssessor(answering('Sure:\n```json\n{"dangerous":true,"reason":"deletes data"}\n```')).assess('rm -rf /', MODEL);
    expect(verdict).toEqual({ dangerous: true, reason: 'deletes data' });
  });

  describe('when it cannot get a clear verdict', () => {
    it('treats a missing model as dangerous', async () => {
      expect((await new DangerAssessor(null).assess('ls', MODEL)).dangerous).toBe(true);
    });

    it('treats a missing model configuration as dangerous', async () => {
      expect((await new DangerAssessor(answering('{"dangerous":false}')).assess('ls', null)).dangerous).toBe(true);
    });

    it.each(['maybe', '{"dangerous":"no"}', '{"reason":"fine"}', '{not json}'])('treats the answer %s as dangerous', async (answer) => {
      expect((await new DangerAssessor(answering(answer)).assess('ls', MODEL)).dangerous).toBe(true);
    });

    it('treats a failing model as dangerous and says why', async () => {
      const failing: DangerClassifierModel = { complete: async () => Promise.reject(new Error('503 from provider')) };
      const verdict = await new DangerAssessor(failing).assess('ls', MODEL);
      expect(verdict).toEqual({ dangerous: true, reason: expect.stringContaining('503 from provider') });
    });

    it('gives up on a model that does not answer in time', async () => {
      const silent: DangerClassifierModel = {
        complete: (_prompt, _config, signal) =>
          new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted')))),
      };
      const verdict = await new DangerAssessor(silent, { timeoutMs: 20 }).assess('ls', MODEL);
      expect(verdict).toEqual({ dangerous: true, reason: expect.stringContaining('timed out') });
    });
  });
});
