import { RE2JS } from 're2js';

import type { ArgumentResult } from '../tool-arguments';
import { errorMessage } from '../../runtime/error-message';

/** A compiled glob: `test` answers whether a whole relative path matches, in linear time. */
export interface GlobMatcher {
  test(relativePath: string): boolean;
  /**
   * The pattern's leading directories that hold no wildcard, `/`-separated (`src/lib` for
   * `src/lib/**\/*.ts`; `''` when the first segment has one, or there is only one segment).
   * Every path the pattern matches lies below them, so a walk need look nowhere else.
   */
  literalDirectory: string;
}

const REGEX_SPECIAL = new Set(['.', '+', '^', '$', '(', ')', '[', ']', '|', '\\', '/']);

/**
 * Compiles a glob into an anchored matcher over `/`-separated relative paths.
 *
 * Supported: `*` (any run of characters within one path segment), `?` (one character within a
 * segment), `**` as a whole segment (any number of segments, none included, so `**\/*.ts` also
 * matches `a.ts`), `{a,b}` alternatives (nestable), and `\` to escape the next character. Every
 * other character is literal (so `[id].tsx` names a file). `*` also matches names starting with
 * a dot. Absolute patterns and `..` segments are refused: a pattern only selects files under its
 * base directory.
 *
 * The glob becomes a regular expression run by RE2 (`re2js`), not by the backtracking `RegExp`
 * engine: a pattern such as `*a*a*a*a*a*b` would otherwise take time exponential in its number of
 * stars on a long name, and the walk runs on the server's event loop.
 */
export function compileGlob(pattern: string): ArgumentResult<GlobMatcher> {
  // Compiling costs far more than matching, and models use the same few patterns again and
  // again: the latest outcomes are kept (a matcher holds no state between calls).
  const known = compiledGlobs.get(pattern);
  if (known) {
    compiledGlobs.delete(pattern);
    compiledGlobs.set(pattern, known);
    return known;
  }
  const outcome = compile(pattern);
  compiledGlobs.set(pattern, outcome);
  if (compiledGlobs.size > COMPILED_GLOBS_KEPT) compiledGlobs.delete(compiledGlobs.keys().next().value!);
  return outcome;
}

/** How many compiled patterns `compileGlob` keeps, the most recently used. */
const COMPILED_GLOBS_KEPT = 64;
const compiledGlobs = new Map<string, ArgumentResult<GlobMatcher>>();

function compile(pattern: string): ArgumentResult<GlobMatcher> {
  let glob = pattern;
  while (glob.startsWith('./')) glob = glob.slice(2);
  if (glob === '') return { ok: false, error: 'glob pattern must not be empty' };
  if (glob.startsWith('/')) return { ok: false, error: `glob pattern '${pattern}' must be relative, not absolute` };
  if (glob.split('/').includes('..')) return { ok: false, error: `glob pattern '${pattern}' must not contain '..'` };

  let source = '';
  let depth = 0;
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i];
    if (char === '\\') {
      if (i + 1 >= glob.length) return { ok: false, error: `glob pattern '${pattern}' ends with a lone '\\'` };
      source += escapeRegex(glob[++i]);
    } else if (char === '*') {
      let end = i;
      while (glob[end] === '*') end++;
      if (end - i >= 2 && startsSegment(glob, i, depth) && endsSegment(glob, end, depth)) {
        if (glob[end] === '/') {
          source += '(?:.*/)?';
          end++;
        } else {
          source += '.*';
        }
      } else {
        source += '[^/]*';
      }
      i = end - 1;
    } else if (char === '?') {
      source += '[^/]';
    } else if (char === '{') {
      depth++;
      source += '(?:';
    } else if (char === '}' && depth > 0) {
      depth--;
      source += ')';
    } else if (char === ',' && depth > 0) {
      source += '|';
    } else {
      source += escapeRegex(char);
    }
  }
  if (depth !== 0) return { ok: false, error: `glob pattern '${pattern}' has an unclosed '{'` };
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(source, RE2JS.DOTALL);
  } catch (error) {
    return { ok: false, error: `glob pattern '${pattern}' cannot be used: ${errorMessage(error)}` };
  }
  return { ok: true, value: { test: (relativePath) => compiled.matches(relativePath), literalDirectory: literalDirectoryOf(glob) } };
}

/** Leading segments before the last one that are plain names: no wildcard, brace or escape, not `.` or empty. */
function literalDirectoryOf(glob: string): string {
  const segments = glob.split('/').slice(0, -1);
  const literal: string[] = [];
  for (const segment of segments) {
    if (segment === '' || segment === '.' || /[*?{}\\]/.test(segment)) break;
    literal.push(segment);
  }
  return literal.join('/');
}

function startsSegment(glob: string, at: number, depth: number): boolean {
  const before = glob[at - 1];
  return at === 0 || before === '/' || (depth > 0 && (before === '{' || before === ','));
}

function endsSegment(glob: string, end: number, depth: number): boolean {
  const after = glob[end];
  return end === glob.length || after === '/' || (depth > 0 && (after === ',' || after === '}'));
}

function escapeRegex(char: string): string {
  return REGEX_SPECIAL.has(char) || char === '*' || char === '?' || char === '{' || char === '}' || char === ','
    ? `\\${char}`
    : char;
}
