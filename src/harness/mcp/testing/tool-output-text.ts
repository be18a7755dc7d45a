import type { ToolReturn } from '../../tool/tool';
import { isToolOutput, type ToolOutput } from '../../tool/tool-output';

/** The value as a `ToolOutput`; fails the test for anything else (a bare string included). */
export function asToolOutput(value: ToolReturn): ToolOutput {
  if (!isToolOutput(value)) throw new Error(`expected a ToolOutput, got ${JSON.stringify(value)}`);
  return value;
}

/** The text parts of an output, joined with "\n": what a test reads of it as the model would. */
export function outputText(value: ToolReturn): string {
  return asToolOutput(value)
    .parts.map((part) => (part.type === 'text' ? part.text : undefined))
    .filter((text): text is string => text !== undefined)
    .join('\n');
}
