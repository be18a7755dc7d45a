import { MCP_TOOL_PREFIX, parseMcpToolName } from '../../harness/tool/mcp-tool-name';

/** How a tool call appears in the activity list and in `tool_call_result.summary`. */
export interface ToolActivityDescription {
  /** `file_read`, `file_write`, `search`, `command`, `task`, `question`, `mcp` or `tool`. */
  type: string;
  /** What the call acted on; the tool name when the arguments do not say. */
  target: string;
  /** A short human line, at most {@link SUMMARY_MAX_LENGTH} characters. */
  summary: string;
}

export const SUMMARY_MAX_LENGTH = 200;
const TARGET_MAX_LENGTH = 300;

type Arguments = Record<string, unknown>;

/**
 * What is already known about a result where it was produced. Given these, the describer does
 * not parse the result (which may be megabytes of JSON): the error message comes from here and an
 * exit code is read from the head of the text.
 */
export interface KnownResultFacts {
  errorMessage?: string;
}

/**
 * Describes a finished tool call from what the model sent and what came back. Pure, and total:
 * malformed arguments, a result of any shape, even values of the wrong type give a description,
 * never an exception.
 */
export function describeToolActivity(
  toolName: string,
  argumentsJson: string,
  result: string,
  isError: boolean,
  known?: KnownResultFacts,
): ToolActivityDescription {
  const name = typeof toolName === 'string' && toolName !== '' ? toolName : 'unknown';
  try {
    const type = activityType(name);
    const args = parseObject(argumentsJson) ?? {};
    const found = findTarget(name, type, args);
    const target = clip(singleLineTarget(found ?? name), TARGET_MAX_LENGTH);
    const text = typeof result === 'string' ? result : '';
    const details = known ? peekResult(text, known) : parseObject(text);
    const summary =
      isError === true
        ? describeFailure(name, type, text, details)
        : describeSuccess(name, type, found === undefined ? undefined : target, args, details);
    return { type, target, summary: shortLine(summary) };
  } catch {
    return { type: 'tool', target: clip(name, TARGET_MAX_LENGTH), summary: shortLine(isError === true ? `${name} failed` : `Ran ${name}`) };
  }
}

function activityType(name: string): string {
  switch (name) {
    case 'read_file':
      return 'file_read';
    case 'write_file':
    case 'edit_file':
      return 'file_write';
    case 'glob':
    case 'grep':
      return 'search';
    case 'shell':
      return 'command';
    case 'ask_user_questions':
      return 'question';
  }
  if (name.startsWith('task_')) return 'task';
  if (name.startsWith(MCP_TOOL_PREFIX)) return 'mcp';
  return 'tool';
}

function findTarget(name: string, type: string, args: Arguments): string | undefined {
  switch (type) {
    case 'file_read':
    case 'file_write':
      return ownString(args, 'path', 'file_path');
    case 'search':
      return ownString(args, 'pattern');
    case 'command':
      return ownString(args, 'command');
    case 'task': {
      const title = ownString(args, 'title');
      if (title !== undefined) return title;
      const id = ownId(args, 'task_id', 'taskId', 'id');
      return id === undefined ? undefined : `#${id}`;
    }
    case 'question':
      return firstQuestion(args);
    case 'mcp': {
      const ref = splitMcpName(name);
      return ref && `${ref.server}/${ref.tool}`;
    }
    default:
      return ownString(args, 'path', 'pattern', 'command', 'query', 'url');
  }
}

function describeSuccess(name: string, type: string, target: string | undefined, args: Arguments, details: Arguments | undefined): string {
  if (type === 'mcp') {
    const ref = splitMcpName(name);
    if (ref) return `Called ${ref.tool} on ${ref.server}`;
  }
  if (type === 'question') {
    const questions = args.questions;
    const count = Object.prototype.hasOwnProperty.call(args, 'questions') && Array.isArray(questions) ? questions.length : 0;
    return count > 0 ? `Asked ${count} question${count === 1 ? '' : 's'}` : 'Asked the user';
  }
  if (name === 'task_list') return 'Listed tasks';
  if (target === undefined) return `Ran ${name}`;
  switch (name) {
    case 'read_file':
      return `Read ${target}`;
    case 'write_file':
      return `Wrote ${target}`;
    case 'edit_file':
      return `Edited ${target}`;
    case 'glob':
    case 'grep': {
      const where = ownString(args, 'path');
      return `Searched for ${target}${where === undefined ? '' : ` in ${where}`}`;
    }
    case 'shell':
      return describeShell(target, details);
    case 'task_create':
      return `Created task ${target}`;
    case 'task_update': {
      const status = ownString(args, 'status');
      return `Updated task ${target}${status === undefined ? '' : ` → ${status}`}`;
    }
    case 'task_delete':
      return `Deleted task ${target}`;
  }
  return `Ran ${name} on ${target}`;
}

function describeShell(command: string, parsed: Arguments | undefined): string {
  if (parsed && hasOwn(parsed, 'exit_code')) return `Ran ${command} (exit code ${display(parsed.exit_code)})`;
  if (parsed && hasOwn(parsed, 'task_id')) return `Started ${command} in the background`;
  return `Ran ${command}`;
}

function describeFailure(name: string, type: string, result: string, parsed: Arguments | undefined): string {
  if (parsed && hasOwn(parsed, 'error')) {
    const message = parsed.error === null || parsed.error === undefined ? '' : display(parsed.error);
    return message.trim() === '' ? `${name} failed` : `${name} failed: ${message}`;
  }
  if (parsed && hasOwn(parsed, 'exit_code')) {
    const stderr = firstLine(ownString(parsed, 'stderr') ?? '');
    const code = `${type === 'command' ? 'Command' : name} exited with code ${display(parsed.exit_code)}`;
    return stderr === '' ? code : `${code}: ${stderr}`;
  }
  const line = firstLine(result);
  return line === '' ? `${name} failed` : `${name} failed: ${line}`;
}

function firstQuestion(args: Arguments): string | undefined {
  if (!hasOwn(args, 'questions') || !Array.isArray(args.questions) || args.questions.length === 0) return undefined;
  const first: unknown = args.questions[0];
  const text =
    typeof first === 'string' ? first : isObject(first) ? ownString(first, 'question', 'text', 'header') : undefined;
  if (text === undefined || text.trim() === '') return undefined;
  const more = args.questions.length - 1;
  return more > 0 ? `${text} (+${more} more)` : text;
}

function splitMcpName(name: string): { server: string; tool: string } | undefined {
  const ref = parseMcpToolName(name);
  return ref && { server: ref.serverName, tool: ref.toolName };
}

const HEAD_LENGTH = 512;

/**
 * The details a summary needs, from known facts and the first characters of the result, without
 * parsing it: a command's `exit_code` (and `stderr` when the head holds it whole).
 */
function peekResult(text: string, known: KnownResultFacts): Arguments | undefined {
  const details: Arguments = {};
  if (known.errorMessage !== undefined) details.error = known.errorMessage;
  const head = text.slice(0, HEAD_LENGTH);
  const exitCode = /"exit_code"\s*:\s*(-?\d+|"[^"\\]*"|null|true|false)/.exec(head);
  if (exitCode) details.exit_code = readScalar(exitCode[1]);
  const stderr = /"stderr"\s*:\s*("(?:[^"\\]|\\.)*")/.exec(head);
  if (stderr) details.stderr = readScalar(stderr[1]);
  return Object.keys(details).length > 0 ? details : undefined;
}

/** Reads one short JSON scalar found in the head of a result. */
function readScalar(token: string): unknown {
  try {
    return JSON.parse(token) as unknown;
  } catch {
    return token;
  }
}

function parseObject(text: unknown): Arguments | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Arguments {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Own properties only: arguments named `constructor` or `__proto__` must not reach the prototype.
function hasOwn(object: Arguments, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(object, key);
}

function ownString(object: Arguments, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const value = hasOwn(object, key) ? object[key] : undefined;
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  return undefined;
}

function ownId(object: Arguments, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const value = hasOwn(object, key) ? object[key] : undefined;
    if ((typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && value.trim() !== '')) {
      return String(value).trim();
    }
  }
  return undefined;
}

function display(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function firstLine(text: string): string {
  const head = text.slice(0, SUMMARY_MAX_LENGTH * 4);
  return head.split(/\r?\n/).find((line) => line.trim() !== '')?.trim() ?? '';
}

function singleLineTarget(text: string): string {
  return text.slice(0, TARGET_MAX_LENGTH * 2).replace(/[\r\n\t\v\f]+/g, ' ');
}

function shortLine(text: string): string {
  return clip(text.slice(0, SUMMARY_MAX_LENGTH * 4).replace(/\s+/g, ' ').trim(), SUMMARY_MAX_LENGTH);
}

/** Cuts to `max` UTF-16 units with an ellipsis, never splitting a surrogate pair. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max - 1);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return `${cut}…`;
}
