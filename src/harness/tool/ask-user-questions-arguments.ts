import { describeType, isPlainObject, parseToolArguments } from './tool-arguments';

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
