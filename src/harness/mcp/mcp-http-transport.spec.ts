import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { connectionLostReason, createMcpHttpTransport } from './mcp-http-transport';

const CALL: JSONRPCMessage = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'work', arguments: {} } };

/** An HTTP endpoint whose every POST is answered by `respond`. */
async function endpoint(respond: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: URL; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => respond(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sseEvent(message: JSONRPCMessage): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

async function waitFor<T>(find: () => T | undefined, description: string): Promise<T> {
  const deadline = Date.now() + 2_000;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${description}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 10));
  }
}

describe('createMcpHttpTransport', () => {
  let server: Awaited<ReturnType<typeof endpoint>> | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function connectedTransport(url: URL): Promise<{ transport: ReturnType<typeof createMcpHttpTransport>; received: JSONRPCMessage[] }> {
    const transport = createMcpHttpTransport(url);
    const received: JSONRPCMessage[] = [];
    transport.onmessage = (message) => received.push(message);
    transport.onerror = () => undefined;
    await transport.start();
    return { transport, received };
  }

  describe("when a request's event stream breaks off", () => {
    it('answers the request with a lost-connection error, after what the stream delivered', async () => {
      const progress: JSONRPCMessage = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 7, progress: 1 } };
      server = await endpoint((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sseEvent(progress), () => setTimeout(() => res.socket?.destroy(), 50));
      });
      const { transport, received } = await connectedTransport(server.url);

      await transport.send(CALL);
      const lost = await waitFor(() => received.find((message) => 'error' in message), 'the error answer');

      expect(received[0]).toEqual(progress);
      expect(lost).toEqual({
        jsonrpc: '2.0',
        id: 7,
        error: { code: ErrorCode.ConnectionClosed, message: expect.stringMatching(/^Connection lost: /), data: { connectionLost: expect.any(String) } },
      });
      const error = lost as { error: { code: number; message: string; data: unknown } };
      expect(connectionLostReason(new McpError(error.error.code, error.error.message, error.error.data))).toMatch(/terminated|closed/);
      await transport.close();
    });

    it('delivers an answer that came before the break first', async () => {
      const answer: JSONRPCMessage = { jsonrpc: '2.0', id: 7, result: { content: [] } };
      server = await endpoint((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sseEvent(answer), () => res.socket?.destroy());
      });
      const { transport, received } = await connectedTransport(server.url);

      await transport.send(CALL);
      await waitFor(() => (received.length > 0 ? true : undefined), 'a message');

      expect(received[0]).toEqual(answer);
      await transport.close();
    });
  });

  it('leaves a stream that ends normally alone', async () => {
    const answer: JSONRPCMessage = { jsonrpc: '2.0', id: 7, result: { content: [] } };
    server = await endpoint((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(sseEvent(answer));
    });
    const { transport, received } = await connectedTransport(server.url);

    await transport.send(CALL);
    await waitFor(() => (received.length > 0 ? true : undefined), 'the answer');
    await new Promise<void>((resolve) => setTimeout(resolve, 50));

    expect(received).toEqual([answer]);
    await transport.close();
  });

  it('passes an answer sent as one JSON body through', async () => {
    const answer: JSONRPCMessage = { jsonrpc: '2.0', id: 7, result: { content: [] } };
    server = await endpoint((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
    const { transport, received } = await connectedTransport(server.url);

    await transport.send(CALL);

    expect(received).toEqual([answer]);
    await transport.close();
  });

  describe('when nobody answers the POST', () => {
    it('fails a request after the handshake as a lost connection', async () => {
      server = await endpoint(() => undefined);
      const url = server.url;
      await server.close();
      server = undefined;
      const { transport } = await connectedTransport(url);

      const failure = await transport.send(CALL).catch((error: unknown) => error);

      expect(connectionLostReason(failure)).toMatch(/ECONNREFUSED/);
      await transport.close();
    });

    it('leaves the failure of the handshake as it is', async () => {
      server = await endpoint(() => undefined);
      const url = server.url;
      await server.close();
      server = undefined;
      const { transport } = await connectedTransport(url);
      const initialize: JSONRPCMessage = {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'spec', version: '1' } },
      };

      const failure = await transport.send(initialize).catch((error: unknown) => error);

      expect(failure).toHaveProperty('message', 'fetch failed');
      expect(connectionLostReason(failure)).toBeUndefined();
      await transport.close();
    });
  });
});
