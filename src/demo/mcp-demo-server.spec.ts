import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createDemoMcpServer, startDemoMcpHttpServer } from './mcp-demo-server';

const DEMO_SERVER_JS = path.join(__dirname, '../../build/dev/demo/mcp-demo-server.js');

/** A real SDK client wired to a fresh demo server in this process. */
async function connectInMemory(): Promise<{ client: Client; close: () => Promise<void> }> {
  const server = createDemoMcpServer();
  const client = new Client({ name: 'spec', version: '1' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return { client, close: async () => void (await Promise.all([client.close(), server.close()])) };
}

describe('createDemoMcpServer', () => {
  let connection: Awaited<ReturnType<typeof connectInMemory>>;
  beforeAll(async () => {
    connection = await connectInMemory();
  });
  afterAll(() => connection.close());

  it('offers the demo tools with their input schemas', async () => {
    const { tools } = await connection.client.listTools();

    expect(tools.map((tool) => tool.name).sort()).toEqual(['crash', 'echo', 'fail', 'pid', 'slow', 'stats']);
    expect(tools.find((tool) => tool.name === 'stats')?.inputSchema).toMatchObject({
      properties: { numbers: { type: 'array', items: { type: 'number' } } },
      required: ['numbers'],
    });
  });

  it('answers stats with structured content and a text rendering of it', async () => {
    const result = await connection.client.callTool({ name: 'stats', arguments: { numbers: [2, 4] } });

    expect(result.structuredContent).toEqual({ count: 2, sum: 6, mean: 3 });
    expect(result.content).toEqual([{ type: 'text', text: '{"count":2,"sum":6,"mean":3}' }]);
  });

  it('marks fail as an error result', async () => {
    const result = await connection.client.callTool({ name: 'fail', arguments: { reason: 'because' } });

    expect(result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'because' }] });
  });

  it('refuses a wait longer than a minute', async () => {
    const result = await connection.client.callTool({ name: 'slow', arguments: { ms: 600_000 } });

    expect(result.isError).toBe(true);
  });

  it('answers slow after the wait', async () => {
    const result = await connection.client.callTool({ name: 'slow', arguments: { ms: 5 } });

    expect(result.content).toEqual([{ type: 'text', text: 'waited 5 ms' }]);
  });
});

describe('startDemoMcpHttpServer', () => {
  it('serves MCP over Streamable HTTP at /mcp and refuses other paths and methods', async () => {
    const server = await startDemoMcpHttpServer(0);
    const client = new Client({ name: 'spec', version: '1' });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));

      const result = await client.callTool({ name: 'echo', arguments: { text: 'in process' } });

      expect(result.content).toEqual([{ type: 'text', text: 'in process' }]);
      expect((await fetch(server.url.replace('/mcp', '/other'), { method: 'POST' })).status).toBe(404);
      expect((await fetch(server.url, { method: 'GET' })).status).toBe(405);
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe('mcp-demo-server command line', () => {
  it('exits with a message when --http is not given a port', async () => {
    if (!existsSync(DEMO_SERVER_JS)) throw new Error(`${DEMO_SERVER_JS} is missing: run npm run build:dev first`);
    const child = spawn(process.execPath, [DEMO_SERVER_JS, '--http', 'eighty'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));

    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

    expect(code).toBe(1);
    expect(stderr).toContain('--http needs a port number (0 for any free port), got eighty');
  });
});
