import { readFileSync } from 'node:fs';
import { describeType, isPlainObject } from '../tool/tool-arguments';
import { McpConfigError } from './mcp-errors';
import { errorMessage } from '../runtime/error-message';

/**
 * One MCP server the harness may connect to, as listed in the file named by
 * `HARNESS_MCP_CONFIG` (`{"servers":[...]}`).
 */
export interface McpServerConfig {
  /** Stable id; sessions select servers by it (`mcpServers: [1, ...]`). */
  id: number;
  /** Unique name; becomes part of tool names (`mcp__<name>__<tool>`), hence `[A-Za-z0-9_-]+`. */
  name: string;
  /** `stdio`: the harness spawns `command`; `http`: it connects to `url` (Streamable HTTP). */
  type: 'stdio' | 'http';
  /** Executable to spawn (`stdio` only). */
  command?: string;
  /** Arguments of `command` (`stdio` only). */
  args?: string[];
  /** Extra environment of the child, added to the SDK's safe default environment (`stdio` only). */
  env?: Record<string, string>;
  /** Endpoint of the server (`http` only). */
  url?: string;
  /**
   * How long a request may go without an answer or a progress notification, in ms (default: the
   * manager's, `HARNESS_MCP_CALL_TIMEOUT_MS`). Each progress notification starts it again.
   */
  callTimeoutMs?: number;
  /** How long starting the server and the MCP handshake may take, in ms (default: the manager's). */
  connectTimeoutMs?: number;
  /**
   * The longest a tool call may take in all, progress or not, in ms (default: the manager's, or
   * ten times the call timeout).
   */
  maxTotalTimeoutMs?: number;
}

/** Server names become part of tool names, so they are kept to what every provider accepts. */
export const MCP_SERVER_NAME_PATTERN = /^[A-Za-z0-9_-]+$/;

/** The longest delay `setTimeout` keeps; a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const TIMEOUT_FIELDS = ['callTimeoutMs', 'connectTimeoutMs', 'maxTotalTimeoutMs'] as const;
type TimeoutField = (typeof TIMEOUT_FIELDS)[number];

const COMMON_FIELDS = ['id', 'name', 'type', ...TIMEOUT_FIELDS];
const STDIO_FIELDS = new Set([...COMMON_FIELDS, 'command', 'args', 'env']);
const HTTP_FIELDS = new Set([...COMMON_FIELDS, 'url']);

/**
 * Validates the content of an MCP configuration file and returns its servers.
 * Throws `McpConfigError` naming the first bad field; duplicate ids or names are refused, and so
 * are fields that do not belong to the server's type (a typo must not be silently ignored).
 */
export function parseMcpConfig(json: unknown): McpServerConfig[] {
  if (!isPlainObject(json)) {
    throw new McpConfigError(`MCP config must be a JSON object with a 'servers' array, got ${describeType(json)}`, null);
  }
  const servers = Object.prototype.hasOwnProperty.call(json, 'servers') ? json.servers : undefined;
  if (!Array.isArray(servers)) {
    throw new McpConfigError(`MCP config field 'servers' must be an array, got ${describeType(servers)}`, 'servers');
  }
  const parsed = servers.map((entry, index) => parseServer(entry, `servers[${index}]`));
  const ids = new Map<number, number>();
  const names = new Map<string, number>();
  parsed.forEach((server, index) => {
    const sameId = ids.get(server.id);
    if (sameId !== undefined) {
      throw new McpConfigError(`servers[${index}].id ${server.id} is already used by servers[${sameId}]`, `servers[${index}].id`);
    }
    const sameName = names.get(server.name);
    if (sameName !== undefined) {
      throw new McpConfigError(
        `servers[${index}].name '${server.name}' is already used by servers[${sameName}]`,
        `servers[${index}].name`,
      );
    }
    ids.set(server.id, index);
    names.set(server.name, index);
  });
  return parsed;
}

/** Reads and validates an MCP configuration file; every failure is an `McpConfigError` naming the file. */
export function loadMcpConfigFile(path: string): McpServerConfig[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new McpConfigError(`Cannot read MCP config file ${path}: ${errorMessage(error)}`, null);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new McpConfigError(`MCP config file ${path} is not valid JSON: ${errorMessage(error)}`, null);
  }
  try {
    return parseMcpConfig(json);
  } catch (error) {
    if (error instanceof McpConfigError) throw new McpConfigError(`${path}: ${error.message}`, error.field);
    throw error;
  }
}

function parseServer(entry: unknown, at: string): McpServerConfig {
  if (!isPlainObject(entry)) throw new McpConfigError(`${at} must be an object, got ${describeType(entry)}`, at);
  const field = (key: string): unknown => (Object.prototype.hasOwnProperty.call(entry, key) ? entry[key] : undefined);

  const id = field('id');
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
    throw new McpConfigError(`${at}.id must be a positive integer, got ${show(id)}`, `${at}.id`);
  }
  const name = field('name');
  if (typeof name !== 'string' || !MCP_SERVER_NAME_PATTERN.test(name)) {
    throw new McpConfigError(
      `${at}.name must be a non-empty string of letters, digits, '_' or '-', got ${show(name)}`,
      `${at}.name`,
    );
  }
  const type = field('type');
  if (type !== 'stdio' && type !== 'http') {
    throw new McpConfigError(`${at}.type must be 'stdio' or 'http', got ${show(type)}`, `${at}.type`);
  }
  const allowed = type === 'stdio' ? STDIO_FIELDS : HTTP_FIELDS;
  for (const key of Object.keys(entry)) {
    if (!allowed.has(key)) {
      throw new McpConfigError(`${at}.${key} is not a field of a '${type}' server`, `${at}.${key}`);
    }
  }
  const server: McpServerConfig =
    type === 'stdio' ? parseStdio(id, name, field, at) : { id, name, type, url: parseUrl(field('url'), at) };
  return { ...server, ...parseTimeouts(field, at) };
}

/** The timeouts the entry sets; fields it leaves out are left out (the manager's defaults apply). */
function parseTimeouts(field: (key: string) => unknown, at: string): Pick<McpServerConfig, TimeoutField> {
  const timeouts: Pick<McpServerConfig, TimeoutField> = {};
  for (const key of TIMEOUT_FIELDS) {
    const value = field(key);
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMER_MS) {
      throw new McpConfigError(
        `${at}.${key} must be a whole number of milliseconds from 1 to ${MAX_TIMER_MS}, got ${show(value)}`,
        `${at}.${key}`,
      );
    }
    timeouts[key] = value;
  }
  const { callTimeoutMs, maxTotalTimeoutMs } = timeouts;
  if (callTimeoutMs !== undefined && maxTotalTimeoutMs !== undefined && maxTotalTimeoutMs < callTimeoutMs) {
    throw new McpConfigError(
      `${at}.maxTotalTimeoutMs (${maxTotalTimeoutMs}) must not be less than ${at}.callTimeoutMs (${callTimeoutMs})`,
      `${at}.maxTotalTimeoutMs`,
    );
  }
  return timeouts;
}

function parseStdio(id: number, name: string, field: (key: string) => unknown, at: string): McpServerConfig {
  const command = field('command');
  if (typeof command !== 'string' || command.trim() === '') {
    throw new McpConfigError(`${at}.command must be a non-empty string, got ${show(command)}`, `${at}.command`);
  }
  const args = field('args') ?? [];
  if (!Array.isArray(args)) throw new McpConfigError(`${at}.args must be an array of strings, got ${show(args)}`, `${at}.args`);
  args.forEach((arg, index) => {
    if (typeof arg !== 'string') {
      throw new McpConfigError(`${at}.args[${index}] must be a string, got ${show(arg)}`, `${at}.args[${index}]`);
    }
  });
  const env = field('env') ?? {};
  if (!isPlainObject(env)) throw new McpConfigError(`${at}.env must be an object of strings, got ${show(env)}`, `${at}.env`);
  for (const [key, value] of Object.entries(env)) {
    if (typeof value !== 'string') {
      throw new McpConfigError(`${at}.env.${key} must be a string, got ${show(value)}`, `${at}.env.${key}`);
    }
  }
  // fromEntries defines own properties, so a key named `__proto__` stays a plain variable name.
  const cleanEnv = Object.fromEntries(Object.entries(env)) as Record<string, string>;
  return { id, name, type: 'stdio', command, args: [...(args as string[])], env: cleanEnv };
}

function parseUrl(value: unknown, at: string): string {
  if (typeof value !== 'string') throw new McpConfigError(`${at}.url must be a string, got ${show(value)}`, `${at}.url`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new McpConfigError(`${at}.url is not a valid URL: ${JSON.stringify(value)}`, `${at}.url`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new McpConfigError(`${at}.url must be an http or https URL, got ${JSON.stringify(value)}`, `${at}.url`);
  }
  return value;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return describeType(value);
}
