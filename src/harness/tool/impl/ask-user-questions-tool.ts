import { BaseTool } from '../tool';
import { describeType, isPlainObject, parseToolArguments } from '../tool-arguments';
import { errorResult } from './json-result';

/** One question put to the user. */
export interface AskUserQuestion {
  /** The question text; never empty. */
  question: string;
  /** Answers to choose from; absent for a free-text question. */
  options?: string[];
  /** Whether several options may be chosen. */
  multiSelect?: boolean;
}

/** Outcome of `validateAskUserQuestionsArguments`. */
export type AskUserQuestionsArguments =
  | { ok: true; questions: AskUserQuestion[]; metadata: Record<string, unknown> | undefined }
  | { ok: false; error: string };

/**
 * Checks the arguments of an `ask_user_questions` call and returns the questions in a clean
 * shape (only the known fields, so nothing unexpected is forwarded to the client).
 */
export function validateAskUserQuestionsArguments(argumentsJson: string): AskUserQuestionsArguments {
  const parsed = parseToolArguments(argumentsJson);
  if (!parsed.ok) return parsed;
  const { questions, metadata } = parsed.args;
  if (questions === undefined || questions === null) return { ok: false, error: "missing required field 'questions'" };
  if (!Array.isArray(questions)) return { ok: false, error: `'questions' must be an array, got ${describeType(questions)}` };
  if (questions.length === 0) return { ok: false, error: "'questions' must contain at least one question" };
  if (metadata !== undefined && metadata !== null && !isPlainObject(metadata)) {
    return { ok: false, error: `'metadata' must be an object, got ${describeType(metadata)}` };
  }

  const clean: AskUserQuestion[] = [];
  for (const [index, item] of questions.entries()) {
    const field = `questions[${index}]`;
    if (!isPlainObject(item)) return { ok: false, error: `${field} must be an object, got ${describeType(item)}` };
    const { question, options, multiSelect } = item;
    if (typeof question !== 'string' || question.trim() === '') {
      return { ok: false, error: `${field}.question must be a non-empty string` };
    }
    const entry: AskUserQuestion = { question };
    if (options !== undefined && options !== null) {
      if (!Array.isArray(options) || !options.every((option) => typeof option === 'string' && option !== '')) {
        return { ok: false, error: `${field}.options must be an array of non-empty strings` };
      }
      entry.options = [...options];
    }
    if (multiSelect !== undefined && multiSelect !== null) {
      if (typeof multiSelect !== 'boolean') {
        return { ok: false, error: `${field}.multiSelect must be a boolean, got ${describeType(multiSelect)}` };
      }
      entry.multiSelect = multiSelect;
    }
    clean.push(entry);
  }
  return { ok: true, questions: clean, metadata: isPlainObject(metadata) ? metadata : undefined };
}

/**
 * `ask_user_questions {questions, metadata?}`: asks the user and waits for the answers. The
 * dispatcher runs it (it needs the session's connection), so this class carries the name,
 * description and schema; called directly it validates the arguments and then refuses.
 */
export class AskUserQuestionsTool extends BaseTool {
  getName(): string {
    return 'ask_user_questions';
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
  override execute(argumentsJson: string, _a?: unknown, _b?: unknown, _c?: unknown): string {
    const parsed = validateAskUserQuestionsArguments(argumentsJson);
    if (!parsed.ok) return errorResult(parsed.error);
    return errorResult('ask_user_questions must be dispatched through the tool dispatcher');
  }
}
