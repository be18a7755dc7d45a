import { describeType, isPlainObject } from '../tool/tool-arguments';
import { McpConfigError } from './mcp-errors';

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
  /**
   * The server's tool annotations (`readOnlyHint`, `destructiveHint`, …) count in approvals and
   * scheduling. Untrusted (the default), they are shown but never relax a decision.
   */
  trusted?: boolean;
}

/** Server names become part of tool names, so they are kept to what every provider accepts. */
export const MCP_SERVER_NAME_PATTERN = /^[A-Za-z0-9_-]+$/;

/** The longest delay `setTimeout` keeps; a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const TIMEOUT_FIELDS = ['callTimeoutMs', 'connectTimeoutMs', 'maxTotalTimeoutMs'] as const;
type TimeoutField = (typeof TIMEOUT_FIELDS)[number];

const COMMON_FIELDS = ['id', 'name', 'type', 'trusted', ...TIMEOUT_FIELDS];
const STDIO_FIELDS = new Set([...COMMON_FIELDS, 'command', 'args', 'env']);
const HTTP_FIELDS = new Set([...COMMON_FIELDS, 'url']);

/**
 * Validates the content of an MCP configuration file and returns its servers.
 * Throws `McpConfigError` naming the first bad field (`servers[1].type: expected 'stdio' or 'http',
 * got "grpc"`); duplicate ids or names are refused, and so are fields that do not belong to the
 * server's type (a typo must not be silently ignored). Reading the file is the caller's job
 * (`loadHarnessConfig`, which names `HARNESS_MCP_CONFIG` and the file).
 */
export function parseMcpConfig(json: unknown): McpServerConfig[] {
  if (!isPlainObject(json)) {
    throw new McpConfigError(`expected a JSON object with a 'servers' array, got ${describeType(json)}`, null);
  }
  const servers = Object.prototype.hasOwnProperty.call(json, 'servers') ? json.servers : undefined;
  if (!Array.isArray(servers)) fail('servers', `expected an array, got ${describeType(servers)}`);
  const parsed = servers.map((entry, index) => parseServer(entry, `servers[${index}]`));
  const ids = new Map<number, number>();
  const names = new Map<string, number>();
  parsed.forEach((server, index) => {
    const sameId = ids.get(server.id);
    if (sameId !== undefined) fail(`servers[${index}].id`, `${server.id} is already used by servers[${sameId}]`);
    const sameName = names.get(server.name);
    if (sameName !== undefined) fail(`servers[${index}].name`, `'${server.name}' is already used by servers[${sameName}]`);
    ids.set(server.id, index);
    names.set(server.name, index);
  });
  return parsed;
}

/** Throws the error of one bad field: its path, then what is wrong with it. */
function fail(field: string, detail: string): never {
  throw new McpConfigError(`${field}: ${detail}`, field);
}

function parseServer(entry: unknown, at: string): McpServerConfig {
  if (!isPlainObject(entry)) fail(at, `expected an object, got ${describeType(entry)}`);
  const field = (key: string): unknown => (Object.prototype.hasOwnProperty.call(entry, key) ? entry[key] : undefined);

  const id = field('id');
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) fail(`${at}.id`, `expected a positive whole number, got ${show(id)}`);
  const name = field('name');
  if (typeof name !== 'string' || !MCP_SERVER_NAME_PATTERN.test(name)) {
    fail(`${at}.name`, `expected a non-empty string of letters, digits, '_' or '-', got ${show(name)}`);
  }
  const type = field('type');
  if (type !== 'stdio' && type !== 'http') fail(`${at}.type`, `expected 'stdio' or 'http', got ${show(type)}`);
  const allowed = type === 'stdio' ? STDIO_FIELDS : HTTP_FIELDS;
  for (const key of Object.keys(entry)) {
    if (!allowed.has(key)) fail(`${at}.${key}`, `not a field of a '${type}' server (its fields: ${[...allowed].join(', ')})`);
  }
  const server: McpServerConfig =
    type === 'stdio' ? parseStdio(id, name, field, at) : { id, name, type, url: parseUrl(field('url'), at) };
  const trusted = field('trusted');
  if (trusted !== undefined && typeof trusted !== 'boolean') fail(`${at}.trusted`, `expected true or false, got ${describeType(trusted)}`);
  return { ...server, ...parseTimeouts(field, at), ...(trusted === true ? { trusted } : {}) };
}

/** The timeouts the entry sets; fields it leaves out are left out (the manager's defaults apply). */
function parseTimeouts(field: (key: string) => unknown, at: string): Pick<McpServerConfig, TimeoutField> {
  const timeouts: Pick<McpServerConfig, TimeoutField> = {};
  for (const key of TIMEOUT_FIELDS) {
    const value = field(key);
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMER_MS) {
      fail(`${at}.${key}`, `expected a whole number of milliseconds from 1 to ${MAX_TIMER_MS}, got ${show(value)}`);
    }
    timeouts[key] = value;
  }
  const { callTimeoutMs, maxTotalTimeoutMs } = timeouts;
  if (callTimeoutMs !== undefined && maxTotalTimeoutMs !== undefined && maxTotalTimeoutMs < callTimeoutMs) {
    fail(`${at}.maxTotalTimeoutMs`, `must not be less than ${at}.callTimeoutMs (${callTimeoutMs}), got ${maxTotalTimeoutMs}`);
  }
  return timeouts;
}

function parseStdio(id: number, name: string, field: (key: string) => unknown, at: string): McpServerConfig {
  const command = field('command');
  if (typeof command !== 'string' || command.trim() === '') fail(`${at}.command`, `expected a non-empty string, got ${show(command)}`);
  const args = field('args') ?? [];
  if (!Array.isArray(args)) fail(`${at}.args`, `expected an array of strings, got ${show(args)}`);
  args.forEach((arg, index) => {
    if (typeof arg !== 'string') fail(`${at}.args[${index}]`, `expected a string, got ${show(arg)}`);
  });
  const env = field('env') ?? {};
  if (!isPlainObject(env)) fail(`${at}.env`, `expected an object of strings, got ${show(env)}`);
  for (const [key, value] of Object.entries(env)) {
    if (typeof value !== 'string') fail(`${at}.env.${key}`, `expected a string, got ${show(value)}`);
  }
  // fromEntries defines own properties, so a key named `__proto__` stays a plain variable name.
  const cleanEnv = Object.fromEntries(Object.entries(env)) as Record<string, string>;
  return { id, name, type: 'stdio', command, args: [...(args as string[])], env: cleanEnv };
}

function parseUrl(value: unknown, at: string): string {
  if (typeof value !== 'string') fail(`${at}.url`, `expected a string, got ${show(value)}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    fail(`${at}.url`, `not a valid URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`${at}.url`, `expected an http or https URL, got ${JSON.stringify(value)}`);
  return value;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return describeType(value);
}
