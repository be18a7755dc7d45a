import type { Tool } from './tool';
import type { ToolDescriptor } from './tool-descriptor';
import type { ToolConcurrency } from './tool-invocation';
import { MCP_TOOL_PREFIX } from './mcp-tool-name';

/*
 * What a tool does to the world, as approvals and scheduling read it. A tool's descriptor says
 * it; the name sets below are the marked fallback (design §8.3) for tools that have none — a
 * `Tool` written without `getDescriptor`, or a name the server has no instance of (a desktop
 * tool in LOCAL mode). Do not add new consumers of the sets.
 */

/** Fallback: tools that run on the server whatever the mode (the session's todo list lives there). */
export const SERVER_ONLY_TOOLS: ReadonlySet<string> = new Set(['task_create', 'task_update', 'task_list', 'task_delete']);

/** Fallback: tools that change files. */
export const WRITE_TOOLS: ReadonlySet<string> = new Set(['write_file', 'edit_file']);

export const ASK_USER_QUESTIONS_TOOL = 'ask_user_questions';
export const SHELL_TOOL = 'shell';

/** The built-in tools a desktop client runs in LOCAL mode, known by name even where not registered. */
export const DESKTOP_BUILTIN_TOOLS: ReadonlySet<string> = new Set(['read_file', 'write_file', 'edit_file', 'glob', 'grep', SHELL_TOOL]);

/** The tool's descriptor, or `undefined` when it cannot describe itself (or there is no tool). */
export function declaredDescriptor(tool: Tool | undefined): ToolDescriptor | undefined {
  return tool && typeof tool.getDescriptor === 'function' ? tool.getDescriptor() : undefined;
}

/** What a tool with no descriptor is shown as: a built-in server tool of that name. */
export function defaultDescriptor(toolName: string): ToolDescriptor {
  return { name: toolName, source: 'builtin', executor: 'server' };
}

/** A tool's descriptor, or the default one. */
export function describeTool(tool: Tool): ToolDescriptor {
  return declaredDescriptor(tool) ?? defaultDescriptor(tool.getName());
}

/** The facts approvals and scheduling act on, settled once per call. */
export interface ToolFacts {
  /** An MCP tool (by descriptor, or by name for a tool without one). */
  mcp: boolean;
  /** Its hints count: our own tools, and MCP tools of servers marked trusted. */
  trusted: boolean;
  /** Known to change nothing. */
  readOnly: boolean;
  /** Known (or, for an MCP tool whose hints do not count, assumed) to destroy or overwrite. */
  destructive: boolean;
  writesFiles: boolean;
  runsCommands: boolean;
  serverOnly: boolean;
}

/**
 * The facts of a call from its tool's descriptor (`undefined`: the tool has none) and name.
 *
 * With a descriptor, only what it declares counts: a tool that does not say it is read-only is not
 * taken for one. An MCP tool's annotations count only when its server is trusted; otherwise it is
 * assumed destructive, MCP's own default. Names can only make a call stricter: `shell` always
 * runs commands and an `mcp__` name is an untrusted MCP tool unless its descriptor says otherwise.
 *
 * Without a descriptor the fallback name sets decide, as they always did: names in them write
 * files, run commands or are MCP tools; every other name is taken for a read-only tool.
 */
export function toolFacts(descriptor: ToolDescriptor | undefined, toolName: string): ToolFacts {
  const namedMcp = toolName.startsWith(MCP_TOOL_PREFIX);
  const namedShell = toolName === SHELL_TOOL;
  if (descriptor === undefined) {
    const writesFiles = WRITE_TOOLS.has(toolName);
    const serverOnly = SERVER_ONLY_TOOLS.has(toolName);
    return {
      mcp: namedMcp,
      trusted: !namedMcp,
      readOnly: !namedMcp && !namedShell && !writesFiles,
      destructive: namedMcp || namedShell,
      writesFiles,
      runsCommands: namedShell,
      serverOnly,
    };
  }
  const mcp = descriptor.source === 'mcp' || namedMcp;
  const trusted = mcp ? descriptor.source === 'mcp' && descriptor.trusted === true : true;
  const hints = trusted ? (descriptor.annotations ?? {}) : {};
  const runsCommands = descriptor.runsCommands === true || namedShell;
  const readOnly = hints.readOnlyHint === true && !runsCommands;
  // MCP: a tool that is not read-only is destructive unless it says otherwise; our own tools
  // say so when they are.
  const destructive = !readOnly && (mcp ? hints.destructiveHint !== false : hints.destructiveHint === true || runsCommands);
  return {
    mcp,
    trusted,
    readOnly,
    destructive,
    writesFiles: !mcp && descriptor.writesFiles === true,
    runsCommands,
    serverOnly: !mcp && descriptor.serverOnly === true,
  };
}

/** Read-only calls share their round; every other call has it to itself (`ToolConcurrency`). */
export function concurrencyOf(facts: ToolFacts): ToolConcurrency {
  return facts.readOnly ? 'shared' : 'exclusive';
}
