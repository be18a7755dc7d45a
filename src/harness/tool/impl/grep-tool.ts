import * as fs from 'node:fs/promises';

import { RE2JS } from 're2js';

import { optionalBoolean, optionalString, requireString } from '../tool-arguments';
import { resolveInWorkspace, toRelative } from '../workspace-path';
import { looksBinary } from './binary-content';
import { describeFsError } from './fs-error-message';
import { compileGlob } from './glob-pattern';
import { errorResult, jsonResult, messageOf } from './json-result';
import { DEFAULT_MAX_WALK_ENTRIES, WorkspaceFileWalk } from './workspace-file-walk';
import { WorkspaceTool } from './workspace-tool';

/** Options of `GrepTool`. */
export interface GrepToolOptions {
  /** Most matching lines returned (default 200); more sets `truncated`. */
  maxMatches?: number;
  /** Files larger than this are not searched (default 1 MiB). */
  maxFileBytes?: number;
  /** A matching line longer than this is cut and ends with `…` (default 500 characters). */
  maxLineLength?: number;
  /** Most directory entries looked at in one call (default 100 000). */
  maxEntries?: number;
}

/** One matching line. `file` is relative to the workspace root; `line` is 1-based. */
export interface GrepMatch {
  file: string;
  line: number;
  text: string;
}

/**
 * `grep {pattern, path?, glob?, ignore_case?}`: searches the text files below `path` (a directory
 * or one file; default the workspace root) for lines matching the regular expression `pattern`.
 * Patterns use RE2 syntax (as ripgrep does): the common JavaScript syntax — classes, `\d \w \s \b`,
 * groups, alternation, quantifiers — works; lookaround and backreferences are refused with an
 * error. RE2 (`re2js`) matches in time linear in the line's length whatever the pattern, so no
 * pattern can stall the event loop the way a backtracking `(a|a)*b` would. `glob` filters files: without a `/` it is matched against the file name (so `*.ts`
 * selects TypeScript files at any depth, as in ripgrep), otherwise against the path relative to
 * `path`. Binary files (a NUL byte near the start) and files over `maxFileBytes` are skipped.
 * Result: `{"matches":[{"file","line","text"}],"truncated":bool}`.
 */
export class GrepTool extends WorkspaceTool {
  private readonly maxMatches: number;
  private readonly maxFileBytes: number;
  private readonly maxLineLength: number;
  private readonly maxEntries: number;

  constructor(options: GrepToolOptions = {}) {
    super();
    this.maxMatches = options.maxMatches ?? 200;
    this.maxFileBytes = options.maxFileBytes ?? 1024 * 1024;
    this.maxLineLength = options.maxLineLength ?? 500;
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_WALK_ENTRIES;
  }

  getName(): string {
    return 'grep';
  }

  getDescription(): string {
    return (
      'Search the contents of workspace files with a regular expression (RE2 syntax: no lookaround or backreferences). Returns matching lines ' +
      'with file path and 1-based line number. Narrow the search with `path` (directory or file) and `glob` ' +
      '(e.g. `*.ts`, or `src/**/*.ts`). Binary files, very large files, node_modules and .git are skipped.'
    );
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'Regular expression in RE2 syntax, matched against each line.' },
        path: { type: 'string', description: 'Directory or file to search, relative to the workspace root. Default: the root.' },
        glob: { type: 'string', description: 'Only search files matching this glob (file name, or path if it contains `/`).' },
        ignore_case: { type: 'boolean', description: 'Match case-insensitively. Default false.' },
      },
      required: ['pattern'],
      additionalProperties: false,
    };
  }

  override getOutputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        matches: {
          type: 'array',
          items: {
            type: 'object',
            properties: { file: { type: 'string' }, line: { type: 'integer' }, text: { type: 'string' } },
            required: ['file', 'line', 'text'],
          },
        },
        truncated: { type: 'boolean', description: 'True when the search stopped before seeing everything.' },
      },
      required: ['matches', 'truncated'],
    };
  }

  protected async run(args: Record<string, unknown>, workspace: string): Promise<string> {
    const pattern = requireString(args, 'pattern');
    if (!pattern.ok) return errorResult(pattern.error);
    const base = optionalString(args, 'path');
    if (!base.ok) return errorResult(base.error);
    const glob = optionalString(args, 'glob');
    if (!glob.ok) return errorResult(glob.error);
    const ignoreCase = optionalBoolean(args, 'ignore_case');
    if (!ignoreCase.ok) return errorResult(ignoreCase.error);

    let regex: RE2JS;
    try {
      regex = RE2JS.compile(pattern.value, ignoreCase.value ? RE2JS.CASE_INSENSITIVE : 0);
    } catch (error) {
      return errorResult(`invalid regular expression '${pattern.value}': ${messageOf(error)}`);
    }
    let fileFilter: ((relativeToBase: string) => boolean) | null = null;
    if (glob.value) {
      const compiled = compileGlob(glob.value);
      if (!compiled.ok) return errorResult(compiled.error);
      const byName = !glob.value.includes('/');
      fileFilter = (relative) => compiled.value.test(byName ? relative.slice(relative.lastIndexOf('/') + 1) : relative);
    }

    const resolved = await resolveInWorkspace(workspace, base.value || '.');
    if (!resolved.ok) return errorResult(resolved.error);
    let isDirectory: boolean;
    try {
      const stat = await fs.stat(resolved.path);
      isDirectory = stat.isDirectory();
      if (!isDirectory && !stat.isFile()) return errorResult(`'${resolved.relativePath}' is not a regular file`);
    } catch (error) {
      return errorResult(describeFsError(error, resolved.relativePath));
    }

    const matches: GrepMatch[] = [];
    const walk = new WorkspaceFileWalk(resolved.workspace, this.maxEntries);
    const files = isDirectory ? walk.files(resolved.path) : single(resolved.path);
    let truncated = false;
    for await (const file of files) {
      if (fileFilter && isDirectory && !fileFilter(toRelative(resolved.path, file))) continue;
      const text = await this.readSearchable(file);
      if (text === null) continue;
      const lines = text.split(/\r?\n/);
      for (let i = 0; i < lines.length; i++) {
        if (!regex.test(lines[i])) continue;
        if (matches.length === this.maxMatches) {
          truncated = true;
          break;
        }
        matches.push({ file: toRelative(resolved.workspace, file), line: i + 1, text: this.clip(lines[i]) });
      }
      if (truncated) break;
    }
    return jsonResult({ matches, truncated: truncated || walk.limitReached });
  }

  /** The file's text, or `null` for files that are not searched (too large, binary, unreadable). */
  private async readSearchable(file: string): Promise<string | null> {
    try {
      const stat = await fs.stat(file);
      // A FIFO or device (reached through a link) would block the read.
      if (!stat.isFile() || stat.size > this.maxFileBytes) return null;
      const bytes = await fs.readFile(file);
      return looksBinary(bytes) ? null : bytes.toString('utf8');
    } catch {
      return null;
    }
  }

  private clip(line: string): string {
    return line.length > this.maxLineLength ? `${line.slice(0, this.maxLineLength)}…` : line;
  }
}

async function* single(file: string): AsyncGenerator<string> {
  yield file;
}
