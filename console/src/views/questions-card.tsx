import { memo } from 'preact/compat';
import { useContext, useState } from 'preact/hooks';
import type { QuestionsView } from '../state/conversation';
import { SessionContext } from './session-context';

type Answers = Record<string, string | string[]>;

/**
 * The agent's questions (`ask_user_questions`), answered in the page. The answers go back keyed
 * by question text: a choice, several for a multiple-choice question, or free text.
 */
export const QuestionsCard = memo(function QuestionsCard({ questions }: { questions: QuestionsView }) {
  const context = useContext(SessionContext);
  const [answers, setAnswers] = useState<Answers>({});
  const sending = context?.answering.has(questions.requestId) ?? false;
  const id = (index: number) => `q-${questions.requestId}-${index}`;

  if (questions.state !== 'pending') {
    return (
      <article class="questions-card settled" aria-label="Questions from the agent">
        <h3>Questions from the agent</h3>
        <ul>
          {questions.questions.map((question, index) => (
            <li key={index}>
              {question.question}
              {questions.state === 'answered' && <AnswerOf answers={questions.answers} question={question.question} index={index} />}
            </li>
          ))}
        </ul>
        <p class="muted">{STATE_TEXT[questions.state]}</p>
      </article>
    );
  }

  const set = (question: string, value: string | string[]) => setAnswers({ ...answers, [question]: value });
  const toggle = (question: string, option: string, on: boolean) => {
    const current = Array.isArray(answers[question]) ? (answers[question] as string[]) : [];
    set(question, on ? [...current, option] : current.filter((chosen) => chosen !== option));
  };
  const submit = (event: Event) => {
    event.preventDefault();
    context?.feed.answerQuestions(questions.requestId, answers);
  };

  return (
    <article class="questions-card pending" aria-label="Questions from the agent">
      <h3>The agent asks</h3>
      <form onSubmit={submit}>
        {questions.questions.map((question, index) =>
          question.options && question.options.length > 0 ? (
            <fieldset key={index}>
              <legend>{question.question}</legend>
              {question.options.map((option) => (
                <label class="choice" key={option}>
                  {question.multiSelect ? (
                    <input type="checkbox" checked={(answers[question.question] ?? []).includes(option)} onChange={(event) => toggle(question.question, option, event.currentTarget.checked)} />
                  ) : (
                    <input type="radio" name={id(index)} required checked={answers[question.question] === option} onChange={() => set(question.question, option)} />
                  )}
                  <span>{option}</span>
                </label>
              ))}
            </fieldset>
          ) : (
            <div key={index} class="field">
              <label for={id(index)}>{question.question}</label>
              <input id={id(index)} required value={(answers[question.question] as string | undefined) ?? ''} onInput={(event) => set(question.question, event.currentTarget.value)} />
            </div>
          ),
        )}
        <div class="actions">
          <button type="submit" disabled={sending}>
            Send answers
          </button>
          {sending && <span class="muted">Sending…</span>}
        </div>
      </form>
    </article>
  );
});

const STATE_TEXT: Record<Exclude<QuestionsView['state'], 'pending'>, string> = {
  answered: 'Answered.',
  cancelled: 'No longer asked: the questions were withdrawn.',
  closed: 'The run ended without an answer.',
};

function AnswerOf({ answers, question, index }: { answers: unknown; question: string; index: number }) {
  if (typeof answers !== 'object' || answers === null) return null;
  const record = answers as Record<string, unknown>;
  const answer = record[question] ?? record[String(index)];
  if (answer === undefined) return null;
  return <span class="answer"> — {Array.isArray(answer) ? answer.join(', ') : String(answer)}</span>;
}
