import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { parseToolArguments } from '../tool/tool-arguments';
import { formatMcpCallResult } from './mcp-call-result';
import { McpConnectError, McpRequestError, UnknownMcpServerError } from './mcp-errors';
import type { McpServerConfig } from './mcp-server-config';
import type { McpToolRef } from './mcp-tool-ref';

export interface McpClientManagerOptions {
  /** How long one `tools/call` or `tools/list` may wait for its answer (default 60 s). */
  callTimeoutMs?: number;
  /** How long starting a server and the MCP handshake may take (default 15 s). */
  connectTimeoutMs?: number;
  /** Name the harness gives itself in the MCP handshake (default `harness`). */
  clientName?: string;
  /**
   * A session's clients are closed (stdio servers stopped) after this long without a request of
   * the session and while nothing `retain`s it (default 10 minutes); the next request connects
   * again. `0` keeps them until `closeSession`.
   */
  idleTimeoutMs?: number;
}

const DEFAULT_CALL_TIMEOUT_MS = 60_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;
const DEFAULT_IDLE_TIMEOUT_MS = 600_000;
/** A `tools/list` that needs more pages than this is taken for a server that never ends its list. */
const MAX_TOOL_PAGES = 100;
const CLIENT_VERSION = '0.1.0';
/** Enough of a server's stderr to explain why it failed to start. */
const STDERR_TAIL_CHARS = 2_000;

interface Connection {
  client: Client;
}

/** A session's requests in progress, and the timer that closes its clients once it is idle. */
interface Activity {
  inFlight: number;
  idleTimer: NodeJS.Timeout | null;
}

/**
 * Connects to the configured MCP servers with the official SDK (stdio and Streamable HTTP) and
 * keeps one client per session and server, so that sessions never share server-side state and
 * closing a session stops exactly its servers. Clients connect on first use; callers that arrive
 * while a connection is being made share it. A client whose connection died is dropped, and the
 * next call connects again. A session idle for `idleTimeoutMs` has its clients closed, so stdio
 * server processes do not outlive the sessions that use them.
 */
export class McpClientManager {
  private readonly servers = new Map<number, McpServerConfig>();
  /** sessionId → serverId → the (possibly still pending) connection. */
  private readonly sessions = new Map<number, Map<number, Promise<Connection>>>();
  private readonly activity = new Map<number, Activity>();
  private readonly callTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly clientName: string;

  constructor(servers: McpServerConfig[], options: McpClientManagerOptions = {}) {
    for (const server of servers) this.servers.set(server.id, server);
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.clientName = options.clientName ?? 'harness';
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  }

  /** The configured servers, in configuration order. */
  listServers(): McpServerConfig[] {
    return [...this.servers.values()];
  }

  getServer(serverId: number): McpServerConfig | undefined {
    return this.servers.get(serverId);
  }

  /**
   * The tools a server offers, fetched through the session's client (all pages).
   * Throws `UnknownMcpServerError`, `McpConnectError` or `McpRequestError`: whether a failing
   * server hides its tools or fails the session is the caller's decision.
   */
  async listTools(sessionId: number, serverId: number): Promise<McpToolRef[]> {
    const server = this.servers.get(serverId);
    if (!server) throw new UnknownMcpServerError(serverId);
    return this.whileBusy(sessionId, () => this.listServerTools(sessionId, server));
  }

  private async listServerTools(sessionId: number, server: McpServerConfig): Promise<McpToolRef[]> {
    const connection = this.connection(sessionId, server);
    const { client } = await connection;
    const refs: McpToolRef[] = [];
    try {
      let cursor: string | undefined;
      const seen = new Set<string>();
      do {
        if (cursor !== undefined) {
          // A cursor seen before, or no end in sight, would page forever.
          if (seen.has(cursor)) throw new Error(`tools/list returned the cursor '${cursor}' twice`);
          if (seen.size + 1 >= MAX_TOOL_PAGES) throw new Error(`tools/list did not end after ${MAX_TOOL_PAGES} pages`);
          seen.add(cursor);
        }
        const page = await withDeadline(
          this.callTimeoutMs,
          (signal) => client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: this.callTimeoutMs }),
          `no answer within ${this.callTimeoutMs} ms`,
        );
        for (const tool of page.tools) {
          refs.push({
            serverId: server.id,
            serverName: server.name,
            toolName: tool.name,
            description: tool.description ?? tool.title ?? '',
            inputSchema: tool.inputSchema,
          });
        }
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    } catch (error) {
      this.dropIfDead(sessionId, server.id, connection, error);
      throw new McpRequestError(server.id, server.name, 'tools/list', describeFailure(error, this.callTimeoutMs, server.name));
    }
    return refs;
  }

  /**
   * Calls a tool and returns what the model should read (see `formatMcpCallResult`). Never
   * rejects: bad arguments give `{"error": ...}` without calling the server; an unknown server, a
   * failed connection, a server that dies mid-call or no answer within `callTimeoutMs` (counted
   * from when the call is sent, after connecting) give `{"error":"MCP tool call failed: ..."}`.
   */
  async callTool(sessionId: number, serverId: number, toolName: string, argumentsJson: string): Promise<string> {
    const server = this.servers.get(serverId);
    if (!server) return callFailed(new UnknownMcpServerError(serverId).message);
    const parsed = parseToolArguments(argumentsJson);
    if (!parsed.ok) return JSON.stringify({ error: `Invalid arguments for MCP tool '${toolName}': ${parsed.error}` });
    return this.whileBusy(sessionId, () => this.callServerTool(sessionId, server, toolName, parsed.args));
  }

  private async callServerTool(sessionId: number, server: McpServerConfig, toolName: string, args: Record<string, unknown>): Promise<string> {
    const connection = this.connection(sessionId, server);
    let client: Client;
    try {
      ({ client } = await connection);
    } catch (error) {
      return callFailed(error instanceof Error ? error.message : String(error));
    }
    try {
      const result = await withDeadline(
        this.callTimeoutMs,
        (signal) => client.callTool({ name: toolName, arguments: args }, undefined, { signal, timeout: this.callTimeoutMs }),
        `'${toolName}' on MCP server '${server.name}' did not answer within ${this.callTimeoutMs} ms`,
      );
      return formatMcpCallResult(result);
    } catch (error) {
      this.dropIfDead(sessionId, server.id, connection, error);
      return callFailed(describeFailure(error, this.callTimeoutMs, server.name));
    }
  }

  /** Closes the session's clients; stdio servers are stopped (stdin closed, then signalled). */
  async closeSession(sessionId: number): Promise<void> {
    const activity = this.activity.get(sessionId);
    if (activity?.idleTimer) clearTimeout(activity.idleTimer);
    if (activity && activity.inFlight === 0) this.activity.delete(sessionId);
    const clients = this.sessions.get(sessionId);
    if (!clients) return;
    this.sessions.delete(sessionId);
    await Promise.all([...clients.values()].map((connection) => closeConnection(connection)));
  }

  /** Closes every session's clients (application shutdown). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((sessionId) => this.closeSession(sessionId)));
  }

  /** Whether the session has clients open or being opened. */
  hasClients(sessionId: number): boolean {
    return this.sessions.has(sessionId);
  }

  /**
   * Keeps the session's clients open until the returned function is called, however long it goes
   * without a request — for a run, whose model may think or whose other tools may work for longer
   * than `idleTimeoutMs` between two MCP calls, and must not lose the servers' state meanwhile.
   * Calling the function again does nothing.
   */
  retain(sessionId: number): () => void {
    const activity = this.busy(sessionId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.idle(sessionId, activity);
    };
  }

  /** Runs one request of the session; the idle clock starts once its last request has ended. */
  private async whileBusy<T>(sessionId: number, request: () => Promise<T>): Promise<T> {
    const activity = this.busy(sessionId);
    try {
      return await request();
    } finally {
      this.idle(sessionId, activity);
    }
  }

  private busy(sessionId: number): Activity {
    let activity = this.activity.get(sessionId);
    if (!activity) {
      activity = { inFlight: 0, idleTimer: null };
      this.activity.set(sessionId, activity);
    }
    if (activity.idleTimer) clearTimeout(activity.idleTimer);
    activity.idleTimer = null;
    activity.inFlight++;
    return activity;
  }

  private idle(sessionId: number, activity: Activity): void {
    activity.inFlight--;
    if (activity.inFlight === 0) this.startIdleClock(sessionId, activity);
  }

  private startIdleClock(sessionId: number, activity: Activity): void {
    if (this.idleTimeoutMs <= 0) return;
    activity.idleTimer = setTimeout(() => {
      if (this.activity.get(sessionId) !== activity || activity.inFlight > 0) return;
      this.activity.delete(sessionId);
      void this.closeSession(sessionId);
    }, this.idleTimeoutMs);
    activity.idleTimer.unref();
  }

  private connection(sessionId: number, server: McpServerConfig): Promise<Connection> {
    let clients = this.sessions.get(sessionId);
    if (!clients) {
      clients = new Map();
      this.sessions.set(sessionId, clients);
    }
    const existing = clients.get(server.id);
    if (existing) return existing;
    const pending: Promise<Connection> = this.connect(server, () => this.forget(sessionId, server.id, pending));
    clients.set(server.id, pending);
    // A failed connection is forgotten at once, so the next caller tries again.
    pending.catch(() => this.forget(sessionId, server.id, pending));
    return pending;
  }

  private async connect(server: McpServerConfig, onClosed: () => void): Promise<Connection> {
    const client = new Client({ name: this.clientName, version: CLIENT_VERSION }, { capabilities: {} });
    client.onclose = onClosed;
    // Transport errors also reject the affected request, which is where they are reported.
    client.onerror = () => undefined;
    let stderr = '';
    try {
      const transport = createTransport(server, (chunk) => {
        stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
      });
      await withDeadline(
        this.connectTimeoutMs,
        (signal) => client.connect(transport, { signal, timeout: this.connectTimeoutMs }),
        `no handshake within ${this.connectTimeoutMs} ms`,
      );
    } catch (error) {
      await client.close().catch(() => undefined);
      const reason = describeFailure(error, this.connectTimeoutMs, server.name);
      const tail = stderr.trim();
      throw new McpConnectError(server.id, server.name, tail === '' ? reason : `${reason} (stderr: ${tail})`);
    }
    return { client };
  }

  /** Forgets a connection if it is still the one registered (a newer one may have replaced it). */
  private forget(sessionId: number, serverId: number, connection: Promise<Connection>): void {
    const clients = this.sessions.get(sessionId);
    if (clients?.get(serverId) !== connection) return;
    clients.delete(serverId);
    if (clients.size === 0) this.sessions.delete(sessionId);
  }

  /**
   * After a failed request, drops the client when its connection is unusable (closed, or the
   * transport failed), so the next call reconnects. A slow answer or an error the server sent
   * keeps the client: the server is alive and may be serving other calls of the session.
   */
  private dropIfDead(sessionId: number, serverId: number, connection: Promise<Connection>, error: unknown): void {
    if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) return;
    if (error instanceof DeadlineError) return;
    this.forget(sessionId, serverId, connection);
    void closeConnection(connection);
  }
}

function createTransport(server: McpServerConfig, onStderr: (chunk: string) => void): Transport {
  if (server.type === 'http') return new StreamableHTTPClientTransport(new URL(server.url ?? ''));
  const transport = new StdioClientTransport({
    command: server.command ?? '',
    args: server.args ?? [],
    env: { ...getDefaultEnvironment(), ...(server.env ?? {}) },
    stderr: 'pipe',
  });
  // Piped stderr must be drained or a chatty server blocks on a full pipe.
  transport.stderr?.on('data', (chunk: Buffer | string) => onStderr(chunk.toString()));
  return transport;
}

/** The deadline of `withDeadline` passed; distinct so that a timeout is not taken for a dead link. */
class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

/**
 * Runs `start` and rejects with a `DeadlineError` after `ms` at the latest, whatever the transport
 * does. The signal given to `start` is aborted then, which makes the SDK cancel the request on
 * the server and forget it.
 */
async function withDeadline<T>(ms: number, start: (signal: AbortSignal) => Promise<T>, timeoutMessage: string): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new DeadlineError(timeoutMessage);
      controller.abort(error);
      reject(error);
    }, ms);
    timer.unref();
  });
  try {
    return await Promise.race([start(controller.signal), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function closeConnection(connection: Promise<Connection>): Promise<void> {
  let client: Client;
  try {
    ({ client } = await connection);
  } catch {
    return;
  }
  await client.close().catch(() => undefined);
}

function describeFailure(error: unknown, timeoutMs: number, serverName: string): string {
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) return `no answer within ${timeoutMs} ms`;
  if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
    return `MCP server '${serverName}' closed the connection (the server may have exited)`;
  }
  if (!(error instanceof Error)) return String(error);
  // fetch reports "fetch failed" and keeps the useful part (ECONNREFUSED, socket hang up) in `cause`.
  const cause = error.cause instanceof Error ? error.cause.message : null;
  return cause && cause !== error.message ? `${error.message} (${cause})` : error.message;
}

function callFailed(reason: string): string {
  return JSON.stringify({ error: `MCP tool call failed: ${reason}` });
}
