import { validateAskUserQuestionsArguments } from '../ask-user-questions-arguments';
import { AskUserQuestionsTool } from './ask-user-questions-tool';
import { failureMessage, outcomeOf } from './testing/tool-return';

describe('validateAskUserQuestionsArguments', () => {
  it('returns the questions with only their known fields, and the metadata', () => {
    const result = validateAskUserQuestionsArguments(
      JSON.stringify({
        questions: [
          { question: 'Which database?', options: ['SQLite', 'Postgres'], multiSelect: false, extra: 'dropped' },
          { question: 'Anything else?' },
        ],
        metadata: { source: 'plan' },
      }),
    );
    expect(result).toEqual({
      ok: true,
      questions: [{ question: 'Which database?', options: ['SQLite', 'Postgres'], multiSelect: false }, { question: 'Anything else?' }],
      metadata: { source: 'plan' },
    });
    if (result.ok) expect(Object.keys(result.questions[1])).toEqual(['question']);
  });

  it('gives undefined metadata when there is none', () => {
    expect(validateAskUserQuestionsArguments('{"questions":[{"question":"Q?"}]}')).toEqual({
      ok: true,
      questions: [{ question: 'Q?' }],
      metadata: undefined,
    });
  });

  it.each([
    ['{"questions":', /^arguments are not valid JSON/],
    ['[]', /^arguments must be a JSON object, got array$/],
    ['{}', /^missing required field 'questions'$/],
    ['{"questions":"Which?"}', /^'questions' must be an array, got string$/],
    ['{"questions":[]}', /^'questions' must contain at least one question$/],
    ['{"questions":["Which?"]}', /^questions\[0\] must be an object, got string$/],
    ['{"questions":[{"options":["a"]}]}', /^questions\[0\]\.question must be a non-empty string$/],
    ['{"questions":[{"question":"ok"},{"question":"  "}]}', /^questions\[1\]\.question must be a non-empty string$/],
    ['{"questions":[{"question":"Q","options":"a,b"}]}', /^questions\[0\]\.options must be an array of non-empty strings$/],
    ['{"questions":[{"question":"Q","options":["a",2]}]}', /^questions\[0\]\.options must be an array of non-empty strings$/],
    ['{"questions":[{"question":"Q","multiSelect":"yes"}]}', /^questions\[0\]\.multiSelect must be a boolean, got string$/],
    ['{"questions":[{"question":"Q"}],"metadata":[1]}', /^'metadata' must be an object, got array$/],
  ])('refuses %s', (json, error) => {
    const result = validateAskUserQuestionsArguments(json);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(error);
  });
});

describe('AskUserQuestionsTool', () => {
  const tool = new AskUserQuestionsTool();

  it('is named ask_user_questions and requires at least one question', () => {
    expect(tool.getName()).toBe('ask_user_questions');
    expect(tool.getInputSchema()).toEqual(
      expect.objectContaining({
        type: 'object',
        required: ['questions'],
        properties: expect.objectContaining({ questions: expect.objectContaining({ type: 'array', minItems: 1 }) }),
      }),
    );
  });

  it('refuses to run outside the dispatcher, in every arity, stating a failure', () => {
    const message = 'ask_user_questions must be dispatched through the tool dispatcher';
    const expected = { text: JSON.stringify({ error: message }), isError: true, errorMessage: message };
    const args = '{"questions":[{"question":"Q?"}]}';
    expect(outcomeOf(tool.execute(args))).toEqual(expected);
    expect(outcomeOf(tool.execute(args, '/ws'))).toEqual(expected);
    expect(outcomeOf(tool.execute(args, 1, 2, '/ws'))).toEqual(expected);
  });

  it('reports invalid arguments before that', () => {
    expect(failureMessage(tool.execute('{"questions":[]}', 1, 2, '/ws'))).toBe("'questions' must contain at least one question");
  });
});
