import * as fs from 'node:fs';
import type { ToolCapabilities } from '../tool';

import { ToolCallContext } from '../tool-call-context';
import { optionalString, requireString } from '../tool-arguments';
import { resolveInWorkspace } from '../workspace-path';
import type { ToolOutput } from '../tool-output';
import { describeFsError } from './fs-error-message';
import { compileGlob } from './glob-pattern';
import { errorResult, jsonResult } from './json-result';
import { DEFAULT_MAX_WALK_ENTRIES, WorkspaceFileWalk } from './workspace-file-walk';
import { WorkspaceTool } from './workspace-tool';

/** Options of `GlobTool`. */
export interface GlobToolOptions {
  /** Most paths returned (default 1000); more sets `truncated`. */
  maxResults?: number;
  /** Most directory entries looked at in one call (default 100 000). */
  maxEntries?: number;
  /** A call running longer than this is stopped and answered with an error (default 30 000 ms, as `grep`). */
  timeoutMs?: number;
  /** The clock the deadline is read from, in milliseconds (default `performance.now`); tests pass their own. */
  now?: () => number;
}

/**
 * `glob {pattern, path?}`: lists the workspace files below `path` (default: the workspace root)
 * whose path relative to `path` matches `pattern` (syntax: `compileGlob`). Result:
 * `{"files":[...],"truncated":bool}`, paths relative to the workspace root, sorted.
 *
 * The walk (`WorkspaceFileWalk`) starts at the pattern's leading plain directories (`src/lib`
 * for `src/lib/**\/*.ts`), so a narrower pattern walks less. It runs on the event loop — it
 * waits on the file system, not on the CPU, and matching a path is linear in its length — and
 * is checked against the deadline before every directory and entry: a call still walking after
 * `timeoutMs` ends with an error asking for a narrower pattern or `path`. No thread or timer is
 * involved.
 */
export class GlobTool extends WorkspaceTool {
  private readonly maxResults: number;
  private readonly maxEntries: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(options: GlobToolOptions = {}) {
    super();
    this.maxResults = options.maxResults ?? 1000;
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_WALK_ENTRIES;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.now = options.now ?? (() => performance.now());
  }

  getName(): string {
    return 'glob';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Find files', annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false } };
  }

  getDescription(): string {
    return (
      'Find files in the workspace by glob pattern. `*` matches within one path segment, `?` one character, ' +
      '`**` any number of directories, `{a,b}` either alternative; e.g. `**/*.ts` or `src/**/*.{js,json}`. ' +
      'node_modules and .git are not searched. Returns paths relative to the workspace root. ' +
      'A call that runs too long is stopped with an error; start the pattern with a directory (`src/**/*.ts`) or give `path` to search less.'
    );
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'Glob pattern, matched against paths relative to `path`.' },
        path: { type: 'string', description: 'Directory to search, relative to the workspace root. Default: the root.' },
      },
      required: ['pattern'],
      additionalProperties: false,
    };
  }

  override getOutputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        files: { type: 'array', items: { type: 'string' }, description: 'Matching files, relative to the workspace root.' },
        truncated: { type: 'boolean', description: 'True when there were more matches than returned.' },
      },
      required: ['files', 'truncated'],
    };
  }

  protected async run(args: Record<string, unknown>, workspace: string): Promise<ToolOutput> {
    const deadline = this.now() + this.timeoutMs;
    const pattern = requireString(args, 'pattern');
    if (!pattern.ok) return errorResult(pattern.error);
    const base = optionalString(args, 'path');
    if (!base.ok) return errorResult(base.error);
    const matcher = compileGlob(pattern.value);
    if (!matcher.ok) return errorResult(matcher.error);

    const resolved = resolveInWorkspace(workspace, base.value || '.');
    if (!resolved.ok) return errorResult(resolved.error);
    try {
      const stat = fs.statSync(resolved.path);
      if (!stat.isDirectory()) return errorResult(`'${resolved.relativePath}' is not a directory`);
    } catch (error) {
      return errorResult(describeFsError(error, resolved.relativePath));
    }

    const signal = ToolCallContext.signal();
    const walk = new WorkspaceFileWalk(resolved.workspace, {
      maxEntries: this.maxEntries,
      shouldStop: () => signal?.aborted === true || this.now() >= deadline,
    });
    const files: string[] = [];
    let truncated = false;
    for await (const file of walk.files(resolved.relativePath, matcher.value.literalDirectory)) {
      if (!matcher.value.test(file.relativeToStart)) continue;
      if (files.length === this.maxResults) {
        truncated = true;
        break;
      }
      files.push(file.relativePath);
    }
    if (walk.stopped && signal?.aborted) return errorResult('glob was cancelled before it finished');
    if (walk.stopped) {
      return errorResult(
        `glob was stopped after its time limit of ${this.timeoutMs} ms; ` +
          'narrow the search: start the pattern with a directory (e.g. `src/**/*.ts`) or give a smaller `path`',
      );
    }
    files.sort();
    return jsonResult({ files, truncated: truncated || walk.limitReached });
  }
}
