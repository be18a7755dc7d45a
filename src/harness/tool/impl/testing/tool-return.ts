import type { ToolReturn } from '../../tool';
import { isToolOutput } from '../../tool-output';

/**
 * How the specs of the built-in tools read what a tool returned. The built-in tools state their
 * outcome (`ToolOutput.isError`), so each reader checks the outcome a spec expects before handing
 * back the text: a call that was expected to succeed and said it failed (or the other way round)
 * fails the test, naming what the tool returned.
 */

/** What a built-in tool's call came to: the text the model reads and the outcome the tool stated. */
export interface ToolOutcome {
  text: string;
  isError: boolean;
  errorMessage?: string;
}

/** The text the model reads: a bare string as it is, a `ToolOutput`'s text parts joined with "\n". */
export function textOf(ret: ToolReturn): string {
  if (!isToolOutput(ret)) return ret;
  return ret.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}

/** The outcome a built-in tool stated; a bare string fails: built-in tools never leave it to the text. */
export function outcomeOf(ret: ToolReturn): ToolOutcome {
  if (!isToolOutput(ret)) throw new Error(`expected a ToolOutput, got the bare string ${JSON.stringify(ret)}`);
  const outcome: ToolOutcome = { text: textOf(ret), isError: ret.isError === true };
  if (ret.errorMessage !== undefined) outcome.errorMessage = ret.errorMessage;
  return outcome;
}

/** The text of a call that succeeded: no `isError`, no `errorMessage`. */
export function successText(ret: ToolReturn): string {
  const outcome = outcomeOf(ret);
  if (outcome.isError || outcome.errorMessage !== undefined) {
    throw new Error(`expected the call to succeed, but the tool stated a failure: ${shown(outcome)}`);
  }
  return outcome.text;
}

/** The JSON object of a call that succeeded (see `successText`). */
export function successJson(ret: ToolReturn): Record<string, unknown> {
  return parseObject(successText(ret));
}

/**
 * The JSON object of a call that failed: `isError` is set, and when the text is
 * `{"error": message}`, `errorMessage` is that message.
 */
export function failureJson(ret: ToolReturn): Record<string, unknown> {
  const outcome = outcomeOf(ret);
  if (!outcome.isError) throw new Error(`expected the call to fail, but the tool stated a success: ${shown(outcome)}`);
  const json = parseObject(outcome.text);
  if (typeof json.error === 'string' && outcome.errorMessage !== json.error) {
    throw new Error(`expected errorMessage ${JSON.stringify(json.error)}, as the text says, got ${shown(outcome)}`);
  }
  return json;
}

/** The message of a call that failed with `{"error": message}` (see `failureJson`). */
export function failureMessage(ret: ToolReturn): string {
  const json = failureJson(ret);
  if (typeof json.error !== 'string') throw new Error(`expected {"error": message}, got ${JSON.stringify(json)}`);
  return json.error;
}

function parseObject(text: string): Record<string, unknown> {
  const parsed: unknown = JSON.parse(text);
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`expected a JSON object, got ${text}`);
  return parsed as Record<string, unknown>;
}

function shown(outcome: ToolOutcome): string {
  return JSON.stringify(outcome);
}
