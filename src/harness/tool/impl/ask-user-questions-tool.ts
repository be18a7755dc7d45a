import { validateAskUserQuestionsArguments } from '../ask-user-questions-arguments';
import type { ToolCapabilities } from '../tool';
import { BaseTool } from '../tool';
import type { ToolOutput } from '../tool-output';
import { errorResult } from './json-result';

/**
 * `ask_user_questions {questions, metadata?}`: asks the user and waits for the answers. The
 * dispatcher runs it (it needs the session's connection), so this class carries the name,
 * description and schema; called directly it validates the arguments and then refuses.
 */
export class AskUserQuestionsTool extends BaseTool {
  getName(): string {
    return 'ask_user_questions';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Ask the user', annotations: { readOnlyHint: true, openWorldHint: false } };
  }

  getDescription(): string {
    return (
      'Ask the user one or more questions and wait for the answers. Use it when a decision needs the ' +
      "user's input. Give options for multiple-choice questions; set multiSelect when several may be chosen."
    );
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        questions: {
          type: 'array',
          minItems: 1,
          description: 'The questions to ask, in order.',
          items: {
            type: 'object',
            properties: {
              question: { type: 'string', description: 'The question text.' },
              options: { type: 'array', items: { type: 'string' }, description: 'Answers to choose from; omit for free text.' },
              multiSelect: { type: 'boolean', description: 'Whether several options may be chosen. Default false.' },
            },
            required: ['question'],
            additionalProperties: false,
          },
        },
        metadata: { type: 'object', description: 'Optional data passed to the client along with the questions.' },
      },
      required: ['questions'],
      additionalProperties: false,
    };
  }

  /** Whatever the arity: the arguments are checked, then the call is refused (see class doc). */
  override execute(argumentsJson: string, _a?: unknown, _b?: unknown, _c?: unknown): ToolOutput {
    const parsed = validateAskUserQuestionsArguments(argumentsJson);
    if (!parsed.ok) return errorResult(parsed.error);
    return errorResult('ask_user_questions must be dispatched through the tool dispatcher');
  }
}
