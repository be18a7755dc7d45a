import { AsyncResource } from 'node:async_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { isPlainObject, parseToolArguments } from '../tool/tool-arguments';
import type { ToolCallProgress } from '../tool/tool-call-context';
import type { ToolOutput } from '../tool/tool-output';
import type { ToolAnnotations } from '../tool/tool-descriptor';
import { errorObjectOutput, mcpCallResultToOutput } from './mcp-call-result';
import { McpConnectError, McpRequestError, UnknownMcpServerError } from './mcp-errors';
import { connectionLostReason, createMcpHttpTransport } from './mcp-http-transport';
import { McpRequestStoppedError, withRequestDeadline } from './mcp-request-deadline';
import { MAX_TIMER_MS, type McpServerConfig } from './mcp-server-config';
import type { McpToolRef } from './mcp-tool-ref';
import { errorMessage } from '../runtime/error-message';

/**
 * Defaults for every server; a server's own `callTimeoutMs`, `connectTimeoutMs` and
 * `maxTotalTimeoutMs` in the MCP config take precedence.
 */
export interface McpClientManagerOptions {
  /**
   * How long one `tools/call` or `tools/list` may go without its answer (default 60 s). A progress
   * notification from the server starts a call's timeout again.
   */
  callTimeoutMs?: number;
  /** How long starting a server and the MCP handshake may take (default 15 s). */
  connectTimeoutMs?: number;
  /**
   * The longest a tool call may take in all, however often it reports progress (default ten
   * times the server's call timeout).
   */
  maxTotalTimeoutMs?: number;
  /** Name the harness gives itself in the MCP handshake (default `harness`). */
  clientName?: string;
  /**
   * A session's clients are closed (stdio servers stopped) after this long without a request of
   * the session and while nothing `retain`s it (default 10 minutes); the next request connects
   * again. `0` keeps them until `closeSession`.
   */
  idleTimeoutMs?: number;
}

/** How one tool call is run: its cancellation and where its progress goes. */
export interface McpCallOptions {
  /**
   * Cancels the call: the server gets `notifications/cancelled` and the call answers at once with
   * an error. Absent: only the deadlines end the call.
   */
  signal?: AbortSignal;
  /**
   * Receives each progress notification the server sends for the call (progress is always
   * requested: it also keeps the call's timeout from expiring). Called from the connection's
   * context, not the caller's.
   */
  onProgress?: (progress: ToolCallProgress) => void;
}

const DEFAULT_CALL_TIMEOUT_MS = 60_000;
const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;
const DEFAULT_IDLE_TIMEOUT_MS = 600_000;
/** Without a configured maximum, a call that keeps reporting progress may run this many call timeouts. */
const DEFAULT_MAX_TOTAL_CALL_TIMEOUTS = 10;
/** A `tools/list` that needs more pages than this is taken for a server that never ends its list. */
const MAX_TOOL_PAGES = 100;
const CLIENT_VERSION = '0.1.0';
/** Enough of a server's stderr to explain why it failed to start. */
const STDERR_TAIL_CHARS = 2_000;

interface Connection {
  client: Client;
}

/** The deadlines that apply to one server. */
interface ServerTimeouts {
  callMs: number;
  connectMs: number;
  maxTotalMs: number;
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
 *
 * A call can be cancelled through its signal and ends at its deadlines (see `callTool`); a call
 * whose connection breaks answers at once, and the next call connects again.
 */
export class McpClientManager {
  private readonly servers = new Map<number, McpServerConfig>();
  /** sessionId → serverId → the (possibly still pending) connection. */
  private readonly sessions = new Map<number, Map<number, Promise<Connection>>>();
  private readonly activity = new Map<number, Activity>();
  private readonly callTimeoutMs: number;
  private readonly maxTotalTimeoutMs: number | undefined;
  private readonly idleTimeoutMs: number;
  private readonly connectTimeoutMs: number;
  private readonly clientName: string;
  /**
   * Runs a function in the context the manager was built in. A connection is shared by all the
   * calls of a session, so it is opened outside the call that happened to need it first: its
   * streams and timers must not carry that call's `ToolCallContext` (id, signal, progress sink)
   * into the callbacks of later calls.
   */
  private readonly outsideAnyCall = AsyncResource.bind(<T>(fn: () => T): T => fn());

  constructor(servers: McpServerConfig[], options: McpClientManagerOptions = {}) {
    for (const server of servers) this.servers.set(server.id, server);
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.maxTotalTimeoutMs = options.maxTotalTimeoutMs;
    this.clientName = options.clientName ?? 'harness';
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  }

  /** The server's own timeouts where its configuration sets them, the manager's otherwise. */
  private timeouts(server: McpServerConfig): ServerTimeouts {
    const callMs = server.callTimeoutMs ?? this.callTimeoutMs;
    return {
      callMs,
      connectMs: server.connectTimeoutMs ?? this.connectTimeoutMs,
      maxTotalMs: server.maxTotalTimeoutMs ?? this.maxTotalTimeoutMs ?? Math.min(callMs * DEFAULT_MAX_TOTAL_CALL_TIMEOUTS, MAX_TIMER_MS),
    };
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
    const { callMs } = this.timeouts(server);
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
        const page = await withRequestDeadline({ timeoutMs: callMs }, ({ signal }) =>
          client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: callMs }),
        );
        for (const tool of page.tools) {
          refs.push({
            serverId: server.id,
            serverName: server.name,
            toolName: tool.name,
            description: tool.description ?? tool.title ?? '',
            inputSchema: tool.inputSchema,
            ...toolPresentation(tool),
            trusted: server.trusted === true,
          });
        }
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    } catch (error) {
      this.dropIfDead(sessionId, server.id, connection, error);
      const reason = error instanceof McpRequestStoppedError ? `no answer within ${callMs} ms` : describeFailure(error, callMs, server.name);
      throw new McpRequestError(server.id, server.name, 'tools/list', reason);
    }
    return refs;
  }

  /**
   * Calls a tool and returns its result as a `ToolOutput` (see `mcpCallResultToOutput`): the
   * server's content parts, its `isError`, its structured content. Never rejects. A call that
   * gets no result is an `isError` output whose text is the JSON error object the model has
   * always read (`errorObjectOutput`): bad arguments give `{"error":"Invalid arguments for MCP
   * tool ..."}` without calling the server; an unknown server, a failed connection, a server that
   * dies or a connection that breaks mid-call, and a call that outlives its deadlines give
   * `{"error":"MCP tool call failed: ..."}`; a cancelled call gives
   * `{"error":"MCP tool call cancelled ..."}` at once.
   *
   * Deadlines (counted from when the call is sent, after connecting): the call ends when the
   * server neither answers nor reports progress for the server's call timeout, and in any case
   * after its maximum total time. When the call is cancelled or a deadline passes, the server is
   * sent `notifications/cancelled` for it.
   */
  async callTool(
    sessionId: number,
    serverId: number,
    toolName: string,
    argumentsJson: string,
    options: McpCallOptions = {},
  ): Promise<ToolOutput> {
    const server = this.servers.get(serverId);
    if (!server) return callFailed(new UnknownMcpServerError(serverId).message);
    const parsed = parseToolArguments(argumentsJson);
    if (!parsed.ok) return errorObjectOutput(`Invalid arguments for MCP tool '${toolName}': ${parsed.error}`);
    if (options.signal?.aborted) return callCancelled(toolName, server.name, options.signal.reason);
    return this.whileBusy(sessionId, () => this.callServerTool(sessionId, server, toolName, parsed.args, options));
  }

  private async callServerTool(
    sessionId: number,
    server: McpServerConfig,
    toolName: string,
    args: Record<string, unknown>,
    { signal, onProgress }: McpCallOptions,
  ): Promise<ToolOutput> {
    const connection = this.connection(sessionId, server);
    let client: Client;
    try {
      ({ client } = await untilCancelled(connection, signal));
    } catch (error) {
      if (error instanceof McpRequestStoppedError) return callCancelled(toolName, server.name, error.callerReason);
      return callFailed(errorMessage(error));
    }
    const { callMs, maxTotalMs } = this.timeouts(server);
    let progressed = false;
    try {
      const result = await withRequestDeadline({ timeoutMs: callMs, maxTotalTimeoutMs: maxTotalMs, signal }, (control) =>
        client.callTool({ name: toolName, arguments: args }, undefined, {
          signal: control.signal,
          // The deadlines above decide; the SDK's own timeout is only a backstop that never fires first.
          timeout: Math.max(callMs, maxTotalMs),
          onprogress: (progress) => {
            progressed = true;
            control.progress();
            reportProgress(onProgress, progress);
          },
        }),
      );
      return mcpCallResultToOutput(result);
    } catch (error) {
      this.dropIfDead(sessionId, server.id, connection, error);
      if (error instanceof McpRequestStoppedError) {
        switch (error.reason) {
          case 'cancelled':
            return callCancelled(toolName, server.name, error.callerReason);
          case 'timeout': {
            const since = progressed ? ' of its last progress report' : '';
            return callFailed(`'${toolName}' on MCP server '${server.name}' did not answer within ${callMs} ms${since}`);
          }
          case 'max-total-timeout':
            return callFailed(`'${toolName}' on MCP server '${server.name}' did not finish within its maximum of ${maxTotalMs} ms`);
        }
      }
      const lost = connectionLostReason(error);
      if (lost !== undefined) return callFailed(`lost the connection to MCP server '${server.name}' before '${toolName}' answered (${lost})`);
      return callFailed(describeFailure(error, callMs, server.name));
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
    const pending: Promise<Connection> = this.outsideAnyCall(() => this.connect(server, () => this.forget(sessionId, server.id, pending)));
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
    const { connectMs } = this.timeouts(server);
    try {
      const transport = createTransport(server, (chunk) => {
        stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
      });
      await withRequestDeadline({ timeoutMs: connectMs }, ({ signal }) => client.connect(transport, { signal, timeout: connectMs }));
    } catch (error) {
      await client.close().catch(() => undefined);
      const reason =
        error instanceof McpRequestStoppedError ? `no handshake within ${connectMs} ms` : describeFailure(error, connectMs, server.name);
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
   * After a failed request, drops the client when its connection is unusable (closed, lost, or the
   * transport failed), so the next call reconnects. A slow answer, a cancelled call or an error
   * the server sent keeps the client: the server is alive and may be serving other calls of the
   * session.
   */
  private dropIfDead(sessionId: number, serverId: number, connection: Promise<Connection>, error: unknown): void {
    if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) return;
    if (error instanceof McpRequestStoppedError) return;
    this.forget(sessionId, serverId, connection);
    void closeConnection(connection);
  }
}

function createTransport(server: McpServerConfig, onStderr: (chunk: string) => void): Transport {
  if (server.type === 'http') return createMcpHttpTransport(new URL(server.url ?? ''));
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

/**
 * Waits for `promise` unless `signal` fires first (then rejects with a cancelled
 * `McpRequestStoppedError`); `promise` itself goes on, for whoever else waits for it.
 */
async function untilCancelled<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  let onAbort: () => void = () => undefined;
  const cancelled = new Promise<never>((_, reject) => {
    onAbort = () => reject(new McpRequestStoppedError('cancelled', signal.reason));
  });
  if (signal.aborted) onAbort();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await Promise.race([promise, cancelled]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Hands a progress notification on; a failing sink must not disturb the connection. */
function reportProgress(onProgress: McpCallOptions['onProgress'], { progress, total, message }: Progress): void {
  if (!onProgress) return;
  try {
    onProgress({ progress, ...(total !== undefined && { total }), ...(message !== undefined && { message }) });
  } catch {
    // Progress is for watchers only.
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

function callFailed(reason: string): ToolOutput {
  return errorObjectOutput(`MCP tool call failed: ${reason}`);
}

function callCancelled(toolName: string, serverName: string, reason: unknown): ToolOutput {
  const why = describeCancelReason(reason);
  const error = `MCP tool call cancelled before '${toolName}' on MCP server '${serverName}' answered`;
  return errorObjectOutput(why ? `${error} (${why})` : error);
}

/**
 * What the caller's abort reason says, when it says more than "aborted". Read by shape: the
 * `DOMException` of `AbortSignal.timeout()` and `abort()` may come from another realm.
 */
function describeCancelReason(reason: unknown): string | null {
  if (typeof reason === 'string') return reason === '' ? null : reason;
  if (typeof reason !== 'object' || reason === null) return null;
  const { name, message } = reason as { name?: unknown; message?: unknown };
  if (name === 'TimeoutError') return "the call's deadline passed";
  if (name === 'AbortError' || typeof message !== 'string' || message === '') return null;
  return message;
}

/** Longest MCP tool title kept for display. */
const MAX_TITLE_LENGTH = 200;
const ANNOTATION_KEYS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

/**
 * The title and annotations a server gave a tool, kept only in their documented shapes: a short
 * string title (the tool's own or its annotations'), and boolean hints.
 */
function toolPresentation(tool: { title?: unknown; annotations?: unknown }): Pick<McpToolRef, 'title' | 'annotations'> {
  const presentation: Pick<McpToolRef, 'title' | 'annotations'> = {};
  const annotations = isPlainObject(tool.annotations) ? tool.annotations : {};
  const title = typeof tool.title === 'string' ? tool.title : annotations.title;
  if (typeof title === 'string' && title.trim() !== '') presentation.title = title.trim().slice(0, MAX_TITLE_LENGTH);
  const hints: ToolAnnotations = {};
  for (const key of ANNOTATION_KEYS) {
    const value = Object.prototype.hasOwnProperty.call(annotations, key) ? annotations[key] : undefined;
    if (typeof value === 'boolean') hints[key] = value;
  }
  if (Object.keys(hints).length > 0) presentation.annotations = hints;
  return presentation;
}
