/**
 * A small MCP server for demos and tests, built with the SDK's `McpServer`.
 *
 *   node build/dev/demo/mcp-demo-server.js              → serves over stdio
 *   node build/dev/demo/mcp-demo-server.js --http PORT  → Streamable HTTP at http://127.0.0.1:PORT/mcp (0 = free port)
 *
 * Its tools cover every outcome a client must handle: plain text, an `isError` result, structured
 * content, an answer that comes late (`slow`) and a server that dies mid-call (`crash`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

/** Longest wait `slow` accepts, so a mistaken call cannot pin the server for long. */
const MAX_SLOW_MS = 60_000;

/** Builds the demo server with its tools registered; connect it to any transport. */
export function createDemoMcpServer(): McpServer {
  const server = new McpServer({ name: 'mcp-demo-server', version: '0.1.0' });

  server.registerTool(
    'echo',
    {
      title: 'Echo',
      description: 'Returns the given text unchanged.',
      inputSchema: { text: z.string().describe('Text to return') },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );

  server.registerTool(
    'fail',
    {
      description: 'Always fails, reporting the reason as a tool error.',
      inputSchema: { reason: z.string().optional() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ reason }) => ({ isError: true, content: [{ type: 'text', text: reason ?? 'failed on purpose' }] }),
  );

  server.registerTool(
    'stats',
    {
      description: 'Count, sum and mean of a list of numbers.',
      inputSchema: { numbers: z.array(z.number()).describe('The numbers to summarise') },
      outputSchema: { count: z.number(), sum: z.number(), mean: z.number().nullable() },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ numbers }) => {
      const sum = numbers.reduce((total, n) => total + n, 0);
      const stats = { count: numbers.length, sum, mean: numbers.length === 0 ? null : sum / numbers.length };
      return { structuredContent: stats, content: [{ type: 'text', text: JSON.stringify(stats) }] };
    },
  );

  server.registerTool(
    'slow',
    {
      description: 'Waits the given number of milliseconds, then answers.',
      inputSchema: { ms: z.number().int().min(0).max(MAX_SLOW_MS) },
    },
    async ({ ms }, extra) => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        // A cancelled call (client timeout) must not keep the timer, and the process, alive.
        extra.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
    },
  );

  server.registerTool(
    'crash',
    { description: 'Exits the server process in the middle of the call (for failure tests).', inputSchema: {} },
    async () => {
      process.exit(1);
    },
  );

  server.registerTool(
    'pid',
    { description: "Returns the server's process id (lets tests see which process answered).", inputSchema: {} },
    async () => ({ content: [{ type: 'text', text: String(process.pid) }] }),
  );

  return server;
}

/** A running HTTP demo server. */
export interface DemoMcpHttpServer {
  /** The MCP endpoint, `http://127.0.0.1:PORT/mcp`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves the demo server over Streamable HTTP in stateless mode (a fresh server and transport per
 * request), the SDK's recommendation for servers that keep no per-client state.
 */
export async function startDemoMcpHttpServer(port = 0, host = '127.0.0.1'): Promise<DemoMcpHttpServer> {
  const httpServer: Server = createServer((req, res) => {
    void handleHttpRequest(req, res);
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
    close: () =>
      new Promise<void>((resolve, reject) => {
        httpServer.closeAllConnections();
        httpServer.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

async function handleHttpRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (path !== '/mcp') {
    sendJsonRpcError(res, 404, 'Not found');
    return;
  }
  // Stateless mode has no session to stream to or to delete, so only POST is served.
  if (req.method !== 'POST') {
    sendJsonRpcError(res, 405, 'Method not allowed');
    return;
  }
  const server = createDemoMcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res);
  } catch (error) {
    process.stderr.write(`mcp-demo-server: ${error instanceof Error ? error.message : String(error)}\n`);
    if (!res.headersSent) sendJsonRpcError(res, 500, 'Internal server error');
  }
}

function sendJsonRpcError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function main(argv: string[]): Promise<void> {
  const httpFlag = argv.indexOf('--http');
  if (httpFlag === -1) {
    await createDemoMcpServer().connect(new StdioServerTransport());
    // The client closing our stdin means it is gone; a pending `slow` call must not keep us alive.
    process.stdin.on('end', () => process.exit(0));
    return;
  }
  const portText = argv[httpFlag + 1];
  const port = Number(portText);
  if (portText === undefined || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--http needs a port number (0 for any free port), got ${portText ?? 'nothing'}`);
  }
  const { url } = await startDemoMcpHttpServer(port);
  process.stdout.write(`mcp-demo-server listening on ${url}\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`mcp-demo-server: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
