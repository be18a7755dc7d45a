import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the replay server received. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The body parsed as JSON (the raw text if it is not JSON). */
  body: unknown;
  /** Resolves when the connection carrying the response closes (the client aborted, or it ended). */
  closed: Promise<void>;
}

/** How the server answers one request. */
export interface ReplayResponse {
  status?: number;
  headers?: Record<string, string>;
  /** Written one by one, a turn of the event loop apart. */
  chunks?: string[];
  /**
   * After the chunks: `end` the response (default), `destroy` the socket, or `hang` (keep it open
   * until the client goes away or the server closes).
   */
  finish?: 'end' | 'destroy' | 'hang';
}

/**
 * A provider stand-in on 127.0.0.1 for adapter tests: the n-th request gets the n-th scripted
 * response, written in the provider's wire format by the test. It records what it received.
 */
export class ReplayServer {
  readonly requests: RecordedRequest[] = [];

  private constructor(
    private readonly server: http.Server,
    private readonly responses: ReplayResponse[],
    readonly url: string,
  ) {}

  static async start(responses: ReplayResponse[]): Promise<ReplayServer> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const replay = new ReplayServer(server, responses, `http://127.0.0.1:${port}/v1`);
    server.on('request', (req, res) => void replay.handle(req, res));
    return replay;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const closed = new Promise<void>((resolve) => res.on('close', () => resolve()));
    let text = '';
    for await (const part of req) text += String(part);
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // keep the raw text
    }
    const index = this.requests.length;
    this.requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, closed });

    const response = this.responses[index];
    if (!response) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `replay server: no response scripted for request ${index + 1}` } }));
      return;
    }
    res.writeHead(response.status ?? 200, { 'content-type': 'text/event-stream', ...response.headers });
    res.flushHeaders();
    for (const chunk of response.chunks ?? []) {
      if (res.destroyed) return;
      res.write(chunk);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    switch (response.finish ?? 'end') {
      case 'end':
        res.end();
        break;
      case 'destroy':
        res.socket?.destroy();
        break;
      case 'hang':
        break;
    }
  }
}

/**
 * Starts replay servers for the tests of the enclosing `describe` and closes them after each
 * test: call it in the `describe` body, and the function it answers in the tests.
 */
export function replayServers(): (responses: ReplayResponse[]) => Promise<ReplayServer> {
  const open: ReplayServer[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((server) => server.close()));
  });
  return async (responses) => {
    const server = await ReplayServer.start(responses);
    open.push(server);
    return server;
  };
}

/** A JSON response body (an error or a non-streamed answer). */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): ReplayResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', ...headers },
    chunks: [JSON.stringify(body)],
  };
}

/** One SSE event in wire format; `event` adds an `event:` line as Anthropic sends it. */
export function sseEvent(data: unknown, event?: string): string {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ''}data: ${payload}\n\n`;
}

/** Re-cuts a text into pieces of `size` characters, so events and lines arrive split anywhere. */
export function cutEvery(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}
