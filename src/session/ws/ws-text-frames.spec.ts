import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { encodeTextFrames } from './ws-text-frames';

/** Encodes the texts and writes them, as one buffer, to the socket of a server-side `ws` connection. */
function writeFrames(server: WebSocket, texts: string[]): void {
  const socket = (server as unknown as { _socket: { write(chunk: Buffer): boolean } })._socket;
  socket.write(encodeTextFrames(texts, texts.map((text) => Buffer.byteLength(text))));
}

describe('encodeTextFrames', () => {
  let wss: WebSocketServer;
  let client: WebSocket;
  let server: WebSocket;
  let received: Array<{ text: string; isBinary: boolean }>;

  beforeEach(async () => {
    wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
    const connected = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
    client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
    received = [];
    client.on('message', (data, isBinary) => received.push({ text: (data as Buffer).toString('utf8'), isBinary }));
    await new Promise<void>((resolve) => client.once('open', () => resolve()));
    server = await connected;
  });

  afterEach(async () => {
    client.terminate();
    server.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });

  const arrived = async (count: number): Promise<void> => {
    while (received.length < count) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('gives a real client each text as one text message, at every length boundary of the header', async () => {
    // 125 / 126: the 7-bit length and the 16-bit one; 65,535 / 65,536: the 16-bit and the 64-bit one.
    const texts = [0, 1, 125, 126, 127, 65_535, 65_536, 300_000].map((length, index) => String(index).repeat(length));
    writeFrames(server, texts);
    await arrived(texts.length);
    expect(received).toEqual(texts.map((text) => ({ text, isBinary: false })));
    expect(client.readyState).toBe(WebSocket.OPEN);
  });

  it('measures the payload in UTF-8 bytes, not in characters', async () => {
    // 42 characters of 2, 3 and 4 bytes each: 125 characters or fewer, but more than 125 bytes.
    const texts = ['é'.repeat(70), '工具'.repeat(21), '🔧'.repeat(40), '{"delta":"naïve ✓"}'];
    writeFrames(server, texts);
    await arrived(texts.length);
    expect(received.map((message) => message.text)).toEqual(texts);
  });

  it('writes nothing for no texts', () => {
    expect(encodeTextFrames([], [])).toHaveLength(0);
  });

  it('refuses a byte length larger than its text', () => {
    expect(() => encodeTextFrames(['ok', 'héllo'], [2, 7])).toThrow(RangeError);
  });
});
