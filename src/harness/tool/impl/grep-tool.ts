import * as fs from 'node:fs';
import { constants as fsConstants } from 'node:fs';
import type { ToolCapabilities } from '../tool';

import { RE2JS } from 're2js';

import { ToolCallContext } from '../tool-call-context';
import { optionalBoolean, optionalString, requireString } from '../tool-arguments';
import type { ToolOutput } from '../tool-output';
import { openFileBeneath, type Descriptor } from '../workspace-open';
import { resolveInWorkspace } from '../workspace-path';
import { looksBinary } from './binary-content';
import { describeFsError } from './fs-error-message';
import { compileGlob, type GlobMatcher } from './glob-pattern';
import { GREP_WORKER_MAX_HEAP_MB, GrepLineMatcher } from './grep-worker';
import { errorMessage } from '../../runtime/error-message';
import { errorResult, jsonResult } from './json-result';
import { readAtMost } from './regular-file';
import { DEFAULT_MAX_WALK_ENTRIES, type WalkedFile, WorkspaceFileWalk } from './workspace-file-walk';
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
  /**
   * A search running longer than this is stopped and answered with an error (default 30 000 ms).
   * Time spent waiting for a free matching thread counts too.
   */
  timeoutMs?: number;
  /** Heap limit of the matching thread in MB (default `GREP_WORKER_MAX_HEAP_MB`, 256). */
  maxWorkerHeapMb?: number;
}

/**
 * Largest compiled pattern (`RE2JS.programSize()`, in instructions) that is searched with.
 * Patterns people grep with compile to tens of instructions (measured: `TODO` 6, a function
 * signature pattern 31, a 13-word alternation 65). Matching cost per byte grows with the program
 * size: `(?:a?){1000}a{1000}[bc]` (3 003 instructions) takes about 35 ms per KB of `a`, a 4 203
 * instruction variant about 53 ms per KB — either would need longer than the default deadline for
 * one 1 MiB file. Above 5 000 the pattern is refused at once, with an error naming its size, rather
 * than left to run into the deadline; below it the deadline still bounds the time.
 */
export const MAX_PROGRAM_SIZE = 5_000;

/**
 * A search sends the files it read to its matching thread together: as soon as they hold this
 * many characters (or `BATCH_FILES` files), and at the end of the walk. It holds one batch at a
 * time, so at most this plus one file's text (`maxFileBytes`).
 */
const BATCH_CHARACTERS = 256 * 1024;
/** Most files in one batch (see `BATCH_CHARACTERS`). */
const BATCH_FILES = 256;

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
 * error. RE2 (`re2js`) matches in time linear in the line's length, so no pattern backtracks
 * exponentially the way `(a|a)*b` does in V8; but the cost per byte grows with the compiled
 * pattern, so:
 * - patterns compiling to more than `MAX_PROGRAM_SIZE` instructions are refused;
 * - matching runs in a worker thread (`GrepLineMatcher`), the walk and file reads on the event
 *   loop, which a match therefore never blocks;
 * - matching threads are shared out process-wide and fairly between sessions
 *   (`configureGrepWorkers`: by default one per core, at most half of them per session, and
 *   extra ones so that a session with no search running need not wait behind other sessions'
 *   slow searches); each has a heap limit (`maxWorkerHeapMb`);
 * - a search running longer than `timeoutMs`, time spent waiting for a thread included, is
 *   stopped with an error: asking to narrow the search, or saying the server is busy when it
 *   never got a thread.
 * The pattern is compiled here first, so an invalid one is reported without starting a thread.
 * `glob` filters files: without a `/` it is matched against the file name (so `*.ts` selects
 * TypeScript files at any depth, as in ripgrep), otherwise against the path relative to `path`,
 * and then only the directory its leading plain segments name is walked (`src/**\/*.ts`: `src`).
 * The walk (`WorkspaceFileWalk`) opens each directory and file relative to its parent.
 * Binary files (a NUL byte near the start) and files over `maxFileBytes` are skipped. Result:
 * `{"matches":[{"file","line","text"}],"truncated":bool}`.
 */
export class GrepTool extends WorkspaceTool {
  private readonly options: GrepToolOptions;
  private readonly maxMatches: number;
  private readonly maxFileBytes: number;
  private readonly maxLineLength: number;
  private readonly maxEntries: number;
  private readonly timeoutMs: number;
  private readonly maxWorkerHeapMb: number;

  /**
   * `session` is the session whose share of the matching threads this instance's searches use
   * (`null`: calls made without a session, which share one). The registered instance has none; a
   * session's call runs on a copy bound to its session (`executeWithSession`).
   */
  constructor(
    options: GrepToolOptions = {},
    private readonly session: number | null = null,
  ) {
    super();
    this.options = options;
    this.maxMatches = options.maxMatches ?? 200;
    this.maxFileBytes = options.maxFileBytes ?? 1024 * 1024;
    this.maxLineLength = options.maxLineLength ?? 500;
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_WALK_ENTRIES;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxWorkerHeapMb = options.maxWorkerHeapMb ?? GREP_WORKER_MAX_HEAP_MB;
  }

  getName(): string {
    return 'grep';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Search file contents', annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false } };
  }

  /**
   * A session's call: its searches wait for matching threads, and are capped, as that session's
   * (`configureGrepWorkers`), not with everybody else's. `WorkspaceTool`'s entry passes on only
   * the workspace, so the call runs on a copy of this tool bound to the session.
   */
  protected override executeWithSession(argumentsJson: string, sessionId: number | null, workspace: string | null): Promise<ToolOutput> {
    const tool = sessionId === this.session ? this : new GrepTool(this.options, sessionId);
    return tool.executeWithWorkspace(argumentsJson, workspace);
  }

  getDescription(): string {
    return (
      'Search the contents of workspace files with a regular expression (RE2 syntax: no lookaround or backreferences). Returns matching lines ' +
      'with file path and 1-based line number. Narrow the search with `path` (directory or file) and `glob` ' +
      '(e.g. `*.ts`, or `src/**/*.ts`). Binary files, very large files, node_modules and .git are skipped. ' +
      'A search that runs too long is stopped with an error; very complex patterns are refused.'
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

  protected async run(args: Record<string, unknown>, workspace: string): Promise<ToolOutput> {
    const pattern = requireString(args, 'pattern');
    if (!pattern.ok) return errorResult(pattern.error);
    const base = optionalString(args, 'path');
    if (!base.ok) return errorResult(base.error);
    const glob = optionalString(args, 'glob');
    if (!glob.ok) return errorResult(glob.error);
    const ignoreCase = optionalBoolean(args, 'ignore_case');
    if (!ignoreCase.ok) return errorResult(ignoreCase.error);

    const flags = ignoreCase.value ? RE2JS.CASE_INSENSITIVE : 0;
    let regex: RE2JS;
    try {
      regex = RE2JS.compile(pattern.value, flags);
    } catch (error) {
      return errorResult(`invalid regular expression '${pattern.value}': ${errorMessage(error)}`);
    }
    const programSize = regex.programSize();
    if (programSize > MAX_PROGRAM_SIZE) {
      return errorResult(
        `regular expression '${pattern.value}' is too complex: it compiles to ${programSize} instructions, ` +
          `more than the limit of ${MAX_PROGRAM_SIZE}; use a simpler pattern (large counted repetitions such as {1000} are costly)`,
      );
    }
    let globMatcher: GlobMatcher | null = null;
    if (glob.value) {
      const compiled = compileGlob(glob.value);
      if (!compiled.ok) return errorResult(compiled.error);
      globMatcher = compiled.value;
    }

    const resolved = resolveInWorkspace(workspace, base.value || '.');
    if (!resolved.ok) return errorResult(resolved.error);
    let isDirectory: boolean;
    try {
      const stat = fs.statSync(resolved.path);
      isDirectory = stat.isDirectory();
      if (!isDirectory && !stat.isFile()) return errorResult(`'${resolved.relativePath}' is not a regular file`);
    } catch (error) {
      return errorResult(describeFsError(error, resolved.relativePath));
    }

    const target: SearchTarget = { workspace: resolved.workspace, relativePath: resolved.relativePath, isDirectory, fileFilter: null, within: '' };
    if (globMatcher && isDirectory) {
      const matcher = globMatcher;
      if (glob.value?.includes('/')) {
        target.fileFilter = (relativeToBase) => matcher.test(relativeToBase);
        target.within = matcher.literalDirectory;
      } else {
        target.fileFilter = (relativeToBase) => matcher.test(relativeToBase.slice(relativeToBase.lastIndexOf('/') + 1));
      }
    }
    return this.searchWithDeadline(target, new GrepLineMatcher(pattern.value, flags, this.maxWorkerHeapMb, this.session));
  }

  /**
   * Runs `search`, but answers with an error once `timeoutMs` has passed, whether the matcher is
   * still waiting for a thread or matching. Whatever the outcome, the timer is cleared, the
   * matcher's thread has exited and its slot is free (or its wait ended) when this settles; a
   * search abandoned at the deadline finds its matcher closed and stops at its next step.
   */
  private async searchWithDeadline(target: SearchTarget, matcher: GrepLineMatcher): Promise<ToolOutput> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), this.timeoutMs);
    });
    // A cancelled call (its run was cancelled) ends at once: its thread is terminated below.
    const signal = ToolCallContext.signal();
    let onAbort: (() => void) | undefined;
    const cancelled = new Promise<ToolOutput>((resolve) => {
      onAbort = () => resolve(errorResult('grep was cancelled before it finished'));
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
    const search = this.search(target, matcher);
    try {
      const result = await Promise.race([search, expired, cancelled]);
      return result ?? errorResult(matcher.isWaitingForSlot ? this.busyMessage() : this.deadlineMessage());
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      // After the deadline the abandoned search rejects (its matcher is closed); nobody waits for it.
      search.catch(() => undefined);
      await matcher.close();
    }
  }

  /** The deadline passed before a matching thread was free: the search itself is not to blame. */
  private busyMessage(): string {
    return (
      `grep was stopped after its time limit of ${this.timeoutMs} ms while waiting for a free search thread: ` +
      'the server is busy with other searches; try again shortly'
    );
  }

  private deadlineMessage(): string {
    return (
      `grep was stopped after its time limit of ${this.timeoutMs} ms; ` +
      'narrow the search with a simpler pattern, a smaller `path` or a `glob`'
    );
  }

  /**
   * Walks the target, reads the searchable files and lets `matcher` find the matching lines. Files
   * are sent to the matcher by batches of about `BATCH_CHARACTERS` (or `BATCH_FILES` files): a thread
   * is taken only once a batch is read and answers it in one round trip, so a search of a small
   * workspace holds its thread for one message, not for the reads of all its files, and a hundred
   * sessions grepping at once do not queue behind each other's file reads.
   */
  private async search(target: SearchTarget, matcher: GrepLineMatcher): Promise<ToolOutput> {
    const matches: GrepMatch[] = [];
    // Stopped with the matcher: a search abandoned at its deadline does not go on walking.
    const walk = new WorkspaceFileWalk(target.workspace, { maxEntries: this.maxEntries, shouldStop: () => matcher.isClosed });
    const files = target.isDirectory ? walk.files(target.relativePath, target.within) : single(target.workspace, target.relativePath);
    let batch: Array<{ file: string; text: string }> = [];
    let batchCharacters = 0;
    /** Matches the batch's files; true when there were more matches than room (the result is truncated). */
    const matchBatch = async (): Promise<boolean> => {
      const sent = batch;
      batch = [];
      batchCharacters = 0;
      const room = this.maxMatches - matches.length;
      // One more than there is room for tells whether the result is truncated.
      const found = await matcher.matchingLinesOf(sent.map(({ text }) => text), room + 1);
      let taken = 0;
      for (let index = 0; index < sent.length; index++) {
        if (found[index].length === 0) continue;
        const lines = sent[index].text.split(/\r?\n/);
        for (const line of found[index]) {
          if (taken === room) return true;
          matches.push({ file: sent[index].file, line: line + 1, text: this.clip(lines[line]) });
          taken++;
        }
      }
      return false;
    };
    let truncated = false;
    for await (const file of files) {
      if (matcher.isClosed) break;
      if (target.fileFilter && !target.fileFilter(file.relativeToStart)) continue;
      const text = this.readSearchable(file);
      if (text === null) continue;
      batch.push({ file: file.relativePath, text });
      batchCharacters += text.length;
      if (batchCharacters < BATCH_CHARACTERS && batch.length < BATCH_FILES) continue;
      truncated = await matchBatch();
      if (truncated) break;
    }
    if (!truncated && batch.length > 0 && !matcher.isClosed) truncated = await matchBatch();
    return jsonResult({ matches, truncated: truncated || walk.limitReached });
  }

  /**
   * The file's text, or `null` for files that are not searched (too large, binary, unreadable,
   * or no longer a regular file). Only regular files are read: a FIFO or device swapped in would
   * block the read, so the file is opened non-blocking and checked on the open handle.
   */
  private readSearchable(file: WalkedFile): string | null {
    let handle: Descriptor;
    try {
      handle = file.open();
    } catch {
      return null;
    }
    try {
      const stat = handle.stat();
      if (!stat.isFile() || stat.size > this.maxFileBytes) return null;
      const bytes = readAtMost(handle, this.maxFileBytes, stat.size);
      return bytes === null || looksBinary(bytes) ? null : bytes.toString('utf8');
    } catch {
      return null;
    } finally {
      handle.close();
    }
  }

  private clip(line: string): string {
    return line.length > this.maxLineLength ? `${line.slice(0, this.maxLineLength)}…` : line;
  }
}

/** Where a validated grep call searches, and which files below a directory it looks at. */
interface SearchTarget {
  /** The workspace's real path. */
  workspace: string;
  /** The directory or file searched, resolved, relative to the workspace root. */
  relativePath: string;
  isDirectory: boolean;
  /** Which files below the directory are read, by their path relative to it; `null`: all. */
  fileFilter: ((relativeToBase: string) => boolean) | null;
  /** Below the directory, only this subdirectory can hold files the filter accepts (`''`: any). */
  within: string;
}

/** The one file a grep call names, opened as the walk opens files: non-blocking, from the workspace root, no link followed. */
async function* single(workspace: string, relativePath: string): AsyncGenerator<WalkedFile> {
  yield {
    relativePath,
    relativeToStart: relativePath.slice(relativePath.lastIndexOf('/') + 1),
    open: () => openFileBeneath(workspace, relativePath, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK),
  };
}
