import type { LlmModelConfig } from '../llm/chat-request';
import type { LlmAdapter } from '../llm/llm-adapter';

/** The verdict on one shell command. */
export interface DangerAssessment {
  dangerous: boolean;
  /** Shown to the user next to the approval request. */
  reason: string;
}

/** The small model interface the assessor needs: one prompt in, the model's text out. */
export interface DangerClassifierModel {
  complete(prompt: string, modelConfig: LlmModelConfig, signal?: AbortSignal): Promise<string>;
}

const PROMPT = `You review shell commands that an AI agent wants to run on a user's machine.
Answer with one JSON object and nothing else: {"dangerous": true|false, "reason": "<one sentence>"}.
A command is dangerous if it deletes or overwrites data, changes system configuration, installs
software, sends data over the network, escalates privileges, or its effect cannot be predicted.
Command:
`;

/**
 * Decides, at permission level SMART, whether a shell command needs the user's approval.
 * It errs on the careful side: no model, a failing model, a slow model or an answer it cannot
 * read all count as dangerous.
 */
export class DangerAssessor {
  private readonly timeoutMs: number;

  constructor(
    private readonly model: DangerClassifierModel | null,
    options: { timeoutMs?: number } = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 15_000;
  }

  async assess(command: string, modelConfig: LlmModelConfig | null): Promise<DangerAssessment> {
    if (!this.model || !modelConfig) {
      return { dangerous: true, reason: 'No model is configured to assess the command' };
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      const answer = await this.model.complete(PROMPT + command, modelConfig, controller.signal);
      return readVerdict(answer);
    } catch (error) {
      const message = controller.signal.aborted
        ? `timed out after ${this.timeoutMs} ms`
        : error instanceof Error
          ? error.message
          : String(error);
      return { dangerous: true, reason: `The command could not be assessed: ${message}` };
    } finally {
      clearTimeout(timer);
    }
  }
}

function readVerdict(answer: string): DangerAssessment {
  const start = answer.indexOf('{');
  const end = answer.lastIndexOf('}');
  if (start >= 0 && end > start) {
    try {
      const verdict: unknown = JSON.parse(answer.slice(start, end + 1));
      if (verdict && typeof verdict === 'object' && typeof (verdict as { dangerous?: unknown }).dangerous === 'boolean') {
        const { dangerous, reason } = verdict as { dangerous: boolean; reason?: unknown };
        return {
          dangerous,
          reason: typeof reason === 'string' && reason.trim() ? reason.trim() : dangerous ? 'Judged dangerous' : 'Judged safe',
        };
      }
    } catch {
      // fall through: an unreadable verdict is treated as dangerous
    }
  }
  return { dangerous: true, reason: 'The assessment could not be read' };
}

/** The production classifier: one non-streamed chat call through the session's provider adapter. */
export class LlmDangerClassifierModel implements DangerClassifierModel {
  constructor(private readonly llm: LlmAdapter) {}

  async complete(prompt: string, modelConfig: LlmModelConfig, signal?: AbortSignal): Promise<string> {
    const response = await this.llm.chat({ messages: [{ role: 'user', content: prompt }], maxTokens: 200 }, modelConfig, signal);
    return response.message.content ?? '';
  }
}
