import { errorOutput, toolOutput, type ToolOutput } from '../tool-output';

/**
 * What the built-in tools answer with. Each states its outcome (`isError`) instead of leaving it
 * to be read from the text; the text the model reads is what these tools always returned.
 */

/**
 * A failure the model can act on: the text is `{"error":"<message>"}`, stated as an error with
 * `message` as its reason.
 */
export function errorResult(message: string): ToolOutput {
  return errorOutput(message);
}

/** A successful JSON result. */
export function jsonResult(value: Record<string, unknown>): ToolOutput {
  return textResult(JSON.stringify(value));
}

/**
 * A successful result whose text is given as it is: whatever it holds (a file whose content is
 * `{"error":"x"}`) is not a failure.
 */
export function textResult(text: string): ToolOutput {
  return toolOutput([{ type: 'text', text }]);
}

/**
 * The text of a built-in tool's result, for where a string is still wanted (a background job's
 * result); text parts joined with "\n", as MCP results are.
 */
export function resultText(output: ToolOutput): string {
  return output.parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
}
