import { requireString } from '../tool-arguments';
import type { ToolCapabilities } from '../tool';
import type { ToolOutput } from '../tool-output';
import { describeFsError } from './fs-error-message';
import { errorResult, jsonResult } from './json-result';
import { openWorkspaceFile, readAtMost } from './regular-file';
import { WorkspaceTool } from './workspace-tool';

/** Lines a change added to and removed from a file. */
export interface FileChange {
  path: string;
  linesAdded: number;
  linesDeleted: number;
}

/**
 * `edit_file {path, old_string, new_string}`: replaces the one exact occurrence of `old_string`
 * in a workspace file. No occurrence, or more than one, is an error (the model must add context
 * until the match is unique). Result: `{"path","file_change":{"path","linesAdded","linesDeleted"}}`
 * (counts as in `countLineChanges`).
 */
export class EditFileTool extends WorkspaceTool {
  private readonly maxFileBytes: number;

  /** `maxFileBytes`: the largest file it edits (default 16 MiB); a file is read no further. */
  constructor(options: { maxFileBytes?: number } = {}) {
    super();
    this.maxFileBytes = options.maxFileBytes ?? 16 * 1024 * 1024;
  }

  getName(): string {
    return 'edit_file';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Edit file', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false }, writesFiles: true };
  }

  getDescription(): string {
    return (
      'Replace an exact piece of text in a workspace file. `old_string` must occur exactly once in the file ' +
      '(include surrounding lines to make it unique); it is replaced by `new_string`. Whitespace and ' +
      'indentation must match exactly.'
    );
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'File path relative to the workspace root.' },
        old_string: { type: 'string', description: 'The exact text to replace; must occur exactly once in the file.' },
        new_string: { type: 'string', description: 'The replacement text (may be empty to delete old_string).' },
      },
      required: ['path', 'old_string', 'new_string'],
      additionalProperties: false,
    };
  }

  override getOutputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'The edited file, relative to the workspace root.' },
        file_change: {
          type: 'object',
          description: 'Lines added and deleted by the edit.',
          properties: {
            path: { type: 'string' },
            linesAdded: { type: 'integer' },
            linesDeleted: { type: 'integer' },
          },
          required: ['path', 'linesAdded', 'linesDeleted'],
        },
      },
      required: ['path', 'file_change'],
    };
  }

  protected async run(args: Record<string, unknown>, workspace: string): Promise<ToolOutput> {
    const pathArg = requireString(args, 'path');
    if (!pathArg.ok) return errorResult(pathArg.error);
    const oldString = requireString(args, 'old_string');
    if (!oldString.ok) return errorResult(oldString.error);
    const newString = requireString(args, 'new_string', { allowEmpty: true });
    if (!newString.ok) return errorResult(newString.error);
    if (oldString.value === newString.value) return errorResult('old_string and new_string are identical; nothing to change');

    // One open for reading and writing: the file changed is the file read.
    const file = await openWorkspaceFile(workspace, pathArg.value, 'edit');
    if (!file.ok) return errorResult(file.error);
    const shown = file.shown;
    let content: string;
    let at: number;
    try {
      const bytes = readAtMost(file.handle, this.maxFileBytes, file.size);
      if (bytes === null) {
        return errorResult(`'${shown}' is larger than ${this.maxFileBytes} bytes; edit_file works on smaller files (use shell for this one)`);
      }
      content = bytes.toString('utf8');
      const count = countOccurrences(content, oldString.value);
      if (count === 0) return errorResult(`old_string was not found in '${shown}'`);
      if (count > 1) {
        return errorResult(`old_string occurs ${count} times in '${shown}'; include more surrounding text so it matches exactly once`);
      }
      at = content.indexOf(oldString.value);
      const updated = content.slice(0, at) + newString.value + content.slice(at + oldString.value.length);
      // `readAtMost` reads at given positions, so the file's offset is still 0: `writeText` writes
      // from the start.
      file.handle.truncate(0);
      file.handle.writeText(updated);
    } catch (error) {
      return errorResult(describeFsError(error, shown));
    } finally {
      file.handle.close();
    }
    const change = countLineChanges(content, at, oldString.value, newString.value);
    const fileChange: FileChange = { path: shown, ...change };
    return jsonResult({ path: shown, file_change: fileChange });
  }
}

/** Occurrences of `needle` in `haystack`, overlapping ones included (they make a match ambiguous). */
export function countOccurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) count++;
  return count;
}

/**
 * Lines added and deleted when `oldString`, found at `at` in `content`, becomes `newString`.
 *
 * The rule, like a single `git diff` hunk: take the whole lines the match touches (from the start
 * of its first line to the end of its last line) before and after the edit, drop the lines the
 * two versions share at the start and at the end, and count what remains on each side. So changing
 * a word inside one line is 1 added, 1 deleted; inserting a line is 1 added, 0 deleted.
 */
export function countLineChanges(
  content: string,
  at: number,
  oldString: string,
  newString: string,
): { linesAdded: number; linesDeleted: number } {
  const blockStart = at === 0 ? 0 : content.lastIndexOf('\n', at - 1) + 1;
  const matchEnd = at + oldString.length;
  const lineEnd = content.indexOf('\n', matchEnd);
  const blockEnd = lineEnd === -1 ? content.length : lineEnd;
  const before = content.slice(blockStart, blockEnd).split('\n');
  const after = (content.slice(blockStart, at) + newString + content.slice(matchEnd, blockEnd)).split('\n');

  let common = 0;
  while (common < before.length && common < after.length && before[common] === after[common]) common++;
  let beforeEnd = before.length;
  let afterEnd = after.length;
  while (beforeEnd > common && afterEnd > common && before[beforeEnd - 1] === after[afterEnd - 1]) {
    beforeEnd--;
    afterEnd--;
  }
  return { linesAdded: afterEnd - common, linesDeleted: beforeEnd - common };
}
