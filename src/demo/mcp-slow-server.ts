/**
 * An MCP server whose tool takes its time, for cancellation, deadline and progress tests.
 *
 *   node build/dev/demo/mcp-slow-server.js [--record FILE]              → serves over stdio
 *   node build/dev/demo/mcp-slow-server.js --http PORT [--record FILE]  → Streamable HTTP at http://127.0.0.1:PORT/mcp
 *
 * `work` waits `ms` milliseconds, reporting progress every `progressEveryMs` when the client asked
 * for progress (a `progressToken`), and stops early when the client cancels. With `--record`, the
 * server appends one JSON line per event to FILE, so a test in another process can see what the
 * server saw: `started` (with the request id, the `label` argument and whether progress was
 * requested), `progress`, `cancelled` (a `notifications/cancelled` arrived), `aborted` (the tool's
 * signal fired) and `finished`. Every line has `at` (ms since the epoch) and `pid`.
 *
 * Over HTTP the server keeps a session per client (the SDK's stateful mode), so that a
 * cancellation reaches the request it names, as it would on a real long-running server.
 */
import { appendFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import * as z from 'zod';

/** Longest wait `work` accepts, so a mistaken call cannot pin the server for long. */
const MAX_WORK_MS = 120_000;

/** One thing the server saw, as written to the record file. */
export interface SlowServerEvent {
  event: 'started' | 'progress' | 'cancelled' | 'aborted' | 'finished';
  /** The JSON-RPC id of the request the event belongs to. */
  requestId?: string | number;
  label?: string;
  progressRequested?: boolean;
  progress?: number;
  reason?: string;
  at: number;
  pid: number;
}

export type Recorder = (event: Omit<SlowServerEvent, 'at' | 'pid'>) => void;

/** Writes events to `file` (one JSON line each), or nowhere without one. */
export function recorderTo(file: string | undefined): Recorder {
  if (file === undefined) return () => undefined;
  return (event) => appendFileSync(file, JSON.stringify({ ...event, at: Date.now(), pid: process.pid }) + '\n');
}

/** Builds the server with its `work` tool; connect it with `connectRecording`. */
export function createSlowMcpServer(record: Recorder): McpServer {
  const server = new McpServer({ name: 'mcp-slow-server', version: '0.1.0' });
  server.registerTool(
    'work',
    {
      description: 'Works for the given number of milliseconds, reporting progress if asked, then answers.',
      inputSchema: {
        ms: z.number().int().min(0).max(MAX_WORK_MS),
        progressEveryMs: z.number().int().min(1).optional().describe('Report progress this often (when the client asks for progress)'),
        label: z.string().optional().describe('Written to the record, to find this call there'),
      },
    },
    async ({ ms, progressEveryMs, label }, extra) => {
      const progressToken = extra._meta?.progressToken;
      record({ event: 'started', requestId: extra.requestId, label, progressRequested: progressToken !== undefined });
      const started = Date.now();
      const aborted = await new Promise<boolean>((resolve) => {
        const ticker =
          progressEveryMs !== undefined && progressToken !== undefined
            ? setInterval(() => {
                const progress = Date.now() - started;
                record({ event: 'progress', requestId: extra.requestId, label, progress });
                void extra
                  .sendNotification({
                    method: 'notifications/progress',
                    params: { progressToken, progress, total: ms, message: `worked ${progress} of ${ms} ms` },
                  })
                  .catch(() => undefined);
              }, progressEveryMs)
            : undefined;
        const finish = (wasAborted: boolean): void => {
          clearTimeout(timer);
          clearInterval(ticker);
          resolve(wasAborted);
        };
        const timer = setTimeout(() => finish(false), ms);
        extra.signal.addEventListener('abort', () => finish(true), { once: true });
      });
      record({ event: aborted ? 'aborted' : 'finished', requestId: extra.requestId, label });
      return { content: [{ type: 'text', text: `worked ${ms} ms` }] };
    },
  );
  server.registerTool(
    'pid',
    { description: "Returns the server's process id.", inputSchema: {} },
    async () => ({ content: [{ type: 'text', text: String(process.pid) }] }),
  );
  return server;
}

/**
 * Connects `server` to `transport`, recording each `notifications/cancelled` before the SDK acts
 * on it (it aborts the request's handler, which records `aborted`).
 */
export async function connectRecording(server: McpServer, transport: Transport, record: Recorder): Promise<void> {
  await server.connect(transport);
  const deliver = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if ('method' in message && message.method === 'notifications/cancelled') {
      const params = (message.params ?? {}) as { requestId?: string | number; reason?: string };
      record({ event: 'cancelled', requestId: params.requestId, reason: params.reason });
    }
    deliver?.(message, extra);
  };
}

/** A running HTTP slow server. */
export interface SlowMcpHttpServer {
  /** The MCP endpoint, `http://127.0.0.1:PORT/mcp`. */
  url: string;
  close(): Promise<void>;
}

/** Serves the slow server over Streamable HTTP, one MCP session (server and transport) per client. */
export async function startSlowMcpHttpServer(record: Recorder, port = 0, host = '127.0.0.1'): Promise<SlowMcpHttpServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const httpServer: Server = createServer((req, res) => {
    void handleHttpRequest(req, res, transports, record);
  });
  await new Promise<void>((resolve, reject) => {
    httpServer.once('error', reject);
    httpServer.listen(port, host, () => {
      httpServer.off('error', reject);
      resolve();
    });
  });
  const address = httpServer.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}/mcp`,
    close: async () => {
      await Promise.all([...transports.values()].map((transport) => transport.close()));
      await new Promise<void>((resolve, reject) => {
        httpServer.closeAllConnections();
        httpServer.close((error) => (error ? reject(error) : resolve()));
      });
    },
  };
}

async function handleHttpRequest(
  req: IncomingMessage,
  res: ServerResponse,
  transports: Map<string, StreamableHTTPServerTransport>,
  record: Recorder,
): Promise<void> {
  if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp') {
    sendJsonRpcError(res, 404, 'Not found');
    return;
  }
  try {
    const sessionId = req.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId !== undefined) {
        sendJsonRpcError(res, 404, 'Session not found');
        return;
      }
      const fresh = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => void transports.set(id, fresh),
      });
      fresh.onclose = () => {
        if (fresh.sessionId !== undefined) transports.delete(fresh.sessionId);
      };
      await connectRecording(createSlowMcpServer(record), fresh, record);
      transport = fresh;
    }
    await transport.handleRequest(req, res);
  } catch (error) {
    process.stderr.write(`mcp-slow-server: ${error instanceof Error ? error.message : String(error)}\n`);
    if (!res.headersSent) sendJsonRpcError(res, 500, 'Internal server error');
  }
}

function sendJsonRpcError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

function optionValue(argv: string[], flag: string): string | undefined {
  const index = argv.indexOf(flag);
  if (index === -1) return undefined;
  const value = argv[index + 1];
  if (value === undefined) throw new Error(`${flag} needs a value`);
  return value;
}

async function main(argv: string[]): Promise<void> {
  const record = recorderTo(optionValue(argv, '--record'));
  const portText = optionValue(argv, '--http');
  if (portText === undefined) {
    await connectRecording(createSlowMcpServer(record), new StdioServerTransport(), record);
    // The client closing our stdin means it is gone; a pending `work` call must not keep us alive.
    process.stdin.on('end', () => process.exit(0));
    return;
  }
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--http needs a port number (0 for any free port), got ${portText}`);
  }
  const { url } = await startSlowMcpHttpServer(record, port);
  process.stdout.write(`mcp-slow-server listening on ${url}\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`mcp-slow-server: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
