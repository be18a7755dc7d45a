import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import {
  SLOW_CLIENT_CLOSE_REASON,
  StreamingWsRegistry,
  WS_CLOSE_TRY_AGAIN_LATER,
  type StreamingWsRegistryOptions,
  type WsConnection,
} from './streaming-ws-registry';
import { FakeWsConnection } from './testing/fake-ws-connection';
import { createWsEvent, type WsEvent } from './ws-event';

const USER = 1;

/** One connection seen from both ends: the `ws` client and the server's socket for it. */
interface Pair {
  client: WebSocket;
  server: WebSocket;
  /** Every frame the client read, parsed. */
  received: WsEvent[];
  /** How the client saw the connection close. */
  clientClosed: Promise<{ code: number; reason: string }>;
  serverClosed: Promise<void>;
}

let wss: WebSocketServer;
let pairs: Pair[];

beforeEach(async () => {
  pairs = [];
  wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
});

afterEach(async () => {
  for (const pair of pairs) {
    pair.client.terminate();
    pair.server.terminate();
  }
  await Promise.all(pairs.map((pair) => pair.serverClosed));
  await new Promise<void>((resolve) => wss.close(() => resolve()));
});

async function connect(): Promise<Pair> {
  const server = new Promise<WebSocket>((resolve) => wss.once('connection', resolve));
  const client = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  const received: WsEvent[] = [];
  client.on('message', (raw) => received.push(JSON.parse(raw.toString()) as WsEvent));
  client.on('error', () => undefined);
  const clientClosed = new Promise<{ code: number; reason: string }>((resolve) =>
    client.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  await new Promise<void>((resolve) => client.once('open', () => resolve()));
  const serverSocket = await server;
  const serverClosed = new Promise<void>((resolve) => serverSocket.once('close', () => resolve()));
  const pair = { client, server: serverSocket, received, clientClosed, serverClosed };
  pairs.push(pair);
  return pair;
}

/** Makes the client stop reading: its kernel buffers fill, then the server's queue grows. */
function stopReading(pair: Pair): void {
  socketOf(pair.client).pause();
}

function resumeReading(pair: Pair): void {
  socketOf(pair.client).resume();
}

function socketOf(client: WebSocket): { pause(): void; resume(): void } {
  return (client as unknown as { _socket: { pause(): void; resume(): void } })._socket;
}

/**
 * Sends 64 KiB frames to the user, a turn of the event loop apart, until some stay queued on the
 * server after the turn's frames were written out: the client's kernel buffers are full. (Within
 * a turn the registry holds frames back to write them together, so a queue seen right after a
 * send says nothing yet.) Returns how many were sent.
 */
async function sendUntilStalled(registry: StreamingWsRegistry, pair: Pair): Promise<number> {
  let sent = 0;
  do {
    registry.sendToUser(USER, delta(sent++, 64 * 1024));
    await new Promise<void>((resolve) => setImmediate(resolve));
  } while (pair.server.bufferedAmount === 0);
  return sent;
}

function delta(index: number, size: number): WsEvent {
  return createWsEvent('content_delta', 2, { delta: String(index).padEnd(size, '.'), executionId: 'e' }, () => 1_700_000_000_000);
}

function setup(options: StreamingWsRegistryOptions = {}) {
  const warnings: string[] = [];
  const registry = new StreamingWsRegistry({ logger: { warn: (message) => warnings.push(message) }, ...options });
  return { registry, warnings };
}

/** Lets the event loop run, so reading clients read. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('StreamingWsRegistry', () => {
  describe('when a client of the user stops reading', () => {
    it('closes it with 1013 before its queue passes the bound, while the other connection gets every event', async () => {
      const limit = 256 * 1024;
      const { registry, warnings } = setup({ sendBufferLimitBytes: limit, slowClientCloseGraceMs: 10_000 });
      const stalled = await connect();
      const reading = await connect();
      registry.add(USER, stalled.server);
      registry.add(USER, reading.server);
      stopReading(stalled);

      let sent = 0;
      let peakQueued = 0;
      // Enough to fill the kernel's buffers (a few MB on loopback) and then the bound, many times over.
      while (registry.connectionCount(USER) === 2 && sent < 4_000) {
        registry.sendToUser(USER, delta(sent++, 16 * 1024));
        peakQueued = Math.max(peakQueued, stalled.server.bufferedAmount);
        await nextTurn();
      }
      registry.sendToUser(USER, createWsEvent('message_end', 2, { executionId: 'e' }));

      expect(registry.connectionCount(USER)).toBe(1);
      expect(peakQueued).toBeGreaterThan(0);
      expect(peakQueued).toBeLessThanOrEqual(limit);
      expect(warnings.join('\n')).toMatch(/user 1 .*does not read/);

      resumeReading(stalled);
      expect(await stalled.clientClosed).toEqual({ code: WS_CLOSE_TRY_AGAIN_LATER, reason: SLOW_CLIENT_CLOSE_REASON });
      // It got an unbroken prefix of the stream, then nothing.
      const stalledGot = stalled.received.map((event) => event.data.delta);
      expect(stalledGot).toEqual(Array.from({ length: stalledGot.length }, (_, index) => delta(index, 16 * 1024).data.delta));
      expect(stalledGot.length).toBeLessThan(sent);

      await waitFor(() => reading.received.at(-1)?.type === 'message_end');
      expect(reading.received).toHaveLength(sent + 1);
      expect(reading.client.readyState).toBe(WebSocket.OPEN);
    });

    it('destroys it when it does not read its close either, once the grace is over', async () => {
      const { registry } = setup({ sendBufferLimitBytes: 64 * 1024, slowClientCloseGraceMs: 50 });
      const stalled = await connect();
      registry.add(USER, stalled.server);
      stopReading(stalled);
      while (registry.connectionCount(USER) === 1) {
        registry.sendToUser(USER, delta(0, 16 * 1024));
        await nextTurn();
      }

      await stalled.serverClosed;
      resumeReading(stalled);
      // 1006: the connection ended without a closing handshake.
      expect((await stalled.clientClosed).code).toBe(1006);
    });

    it('refuses LOCAL requests and error replies to it through `send` as well', async () => {
      const { registry } = setup({ sendBufferLimitBytes: 64 * 1024, slowClientCloseGraceMs: 10_000 });
      const stalled = await connect();
      registry.add(USER, stalled.server);
      stopReading(stalled);
      let taken = true;
      while (taken) {
        taken = registry.send(stalled.server, { type: 'tool_request', sessionId: 2, data: { requestId: 'r', pad: 'x'.repeat(16 * 1024) }, timestamp: 0 });
        await nextTurn();
      }

      expect(registry.connectionCount(USER)).toBe(0);
      // The bound, plus the close frame queued behind it.
      expect(stalled.server.bufferedAmount).toBeLessThanOrEqual(64 * 1024 + 64);
      expect(registry.send(stalled.server, createWsEvent('error', 2, { message: 'late' }))).toBe(false);
    });
  });

  describe('the bound', () => {
    it('lets a frame larger than the bound through to a client with nothing queued', () => {
      const { registry } = setup({ sendBufferLimitBytes: 1_000 });
      const socket = new FakeWsConnection(0);
      registry.add(USER, socket);
      expect(registry.sendToUser(USER, delta(1, 5_000))).toBe(1);
      expect(socket.frames).toHaveLength(1);
      expect(socket.closes).toEqual([]);
    });

    it('sends a frame that fills the queue exactly to the bound, and closes on the next byte', () => {
      const frame = JSON.stringify(delta(1, 100));
      const { registry } = setup({ sendBufferLimitBytes: 500 + frame.length });
      const exact = new FakeWsConnection(500);
      const over = new FakeWsConnection(501);
      registry.add(USER, exact);
      registry.add(USER, over);
      expect(registry.sendToUser(USER, delta(1, 100))).toBe(1);
      expect(exact.frames).toEqual([frame]);
      expect(over.frames).toEqual([]);
      expect(over.closes).toEqual([{ code: WS_CLOSE_TRY_AGAIN_LATER, reason: SLOW_CLIENT_CLOSE_REASON }]);
      expect(registry.connectionCount(USER)).toBe(1);
    });

    it('counts a socket without bufferedAmount (a test double) as having nothing queued', () => {
      const { registry } = setup({ sendBufferLimitBytes: 10 });
      const sent: string[] = [];
      const socket: WsConnection = { readyState: 1, send: (data) => void sent.push(data) };
      registry.add(USER, socket);
      registry.sendToUser(USER, delta(1, 100));
      registry.sendToUser(USER, delta(2, 100));
      expect(sent).toHaveLength(2);
    });

    it('has a default of 8 MiB', () => {
      expect(new StreamingWsRegistry().sendBufferLimitBytes).toBe(8 * 1024 * 1024);
    });
  });

  describe("as the LOCAL side's client connections", () => {
    function setupWithIds(options: StreamingWsRegistryOptions = {}) {
      let next = 1;
      return setup({ newId: () => `conn-${next++}`, ...options });
    }

    it('gives every added connection an id and knows its user until it is removed', () => {
      const { registry } = setupWithIds();
      const socket = new FakeWsConnection();
      expect(registry.add(USER, socket)).toBe('conn-1');
      expect(registry.identify(socket)).toEqual({ id: 'conn-1', userId: USER });
      registry.remove(USER, socket);
      expect(registry.identify(socket)).toBeUndefined();
    });

    it("lists only the user's own connections, and sends to them within the bound", () => {
      const { registry } = setupWithIds({ sendBufferLimitBytes: 100 });
      const reading = new FakeWsConnection();
      const stalled = new FakeWsConnection(100);
      registry.add(USER, reading);
      registry.add(USER, stalled);
      registry.add(2, new FakeWsConnection());
      const clients = registry.connectionsOf(USER);
      expect(clients.map((client) => client.id)).toEqual(['conn-1', 'conn-2']);

      const event = { type: 'tool_request', sessionId: 5, data: { requestId: 'r1' }, timestamp: 0 };
      expect(clients.map((client) => client.send(event))).toEqual([true, false]);

      expect(reading.events()).toEqual([event]);
      expect(stalled.frames).toEqual([]);
      expect(stalled.closes).toEqual([{ code: WS_CLOSE_TRY_AGAIN_LATER, reason: SLOW_CLIENT_CLOSE_REASON }]);
      expect(registry.connectionsOf(USER).map((client) => client.id)).toEqual(['conn-1']);
    });

    it('announces a connection closed when it is removed, once, and not for another user', () => {
      const { registry } = setupWithIds();
      const closed: string[] = [];
      registry.onConnectionClosed((connectionId) => closed.push(connectionId));
      const socket = new FakeWsConnection();
      registry.add(USER, socket);

      registry.remove(2, socket);
      expect(closed).toEqual([]);
      registry.remove(USER, socket);
      registry.remove(USER, socket);
      expect(closed).toEqual(['conn-1']);
    });

    it('announces the close of a connection dropped as too slow only once it is removed: until then its answers still count', () => {
      const { registry } = setupWithIds({ sendBufferLimitBytes: 100 });
      const closed: string[] = [];
      registry.onConnectionClosed((connectionId) => closed.push(connectionId));
      const stalled = new FakeWsConnection(100);
      registry.add(USER, stalled);
      registry.sendToUser(USER, delta(1, 100));
      expect(registry.connectionCount(USER)).toBe(0);
      expect(registry.identify(stalled)).toEqual({ id: 'conn-1', userId: USER });
      expect(closed).toEqual([]);

      registry.remove(USER, stalled);
      expect(closed).toEqual(['conn-1']);
    });

    it('replaces the registration of a connection added again, announcing the old one closed', () => {
      const { registry } = setupWithIds();
      const closed: string[] = [];
      registry.onConnectionClosed((connectionId) => closed.push(connectionId));
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      expect(registry.add(USER, socket)).toBe('conn-2');
      expect(closed).toEqual(['conn-1']);
      expect(registry.connectionCount(USER)).toBe(1);
    });

    it('logs a close listener that throws and still tells the others', () => {
      const { registry, warnings } = setupWithIds();
      const closed: string[] = [];
      registry.onConnectionClosed(() => {
        throw new Error('listener broke');
      });
      registry.onConnectionClosed((connectionId) => closed.push(connectionId));
      const socket = new FakeWsConnection();
      registry.add(USER, socket);
      registry.remove(USER, socket);
      expect(closed).toEqual(['conn-1']);
      expect(warnings.join('\n')).toContain('listener broke');
    });
  });

  describe('writing frames out', () => {
    /** Counts the writes of the server's TCP socket for the pair, and the frames they carried. */
    function countWrites(pair: Pair): { writes: number; chunks: number } {
      const socket = (pair.server as unknown as { _socket: { _writev: (chunks: unknown[], ...rest: unknown[]) => void; _write: (...args: unknown[]) => void } })._socket;
      const counts = { writes: 0, chunks: 0 };
      const writev = socket._writev.bind(socket);
      const write = socket._write.bind(socket);
      socket._writev = (chunks: unknown[], ...rest: unknown[]) => {
        counts.writes++;
        counts.chunks += chunks.length;
        writev(chunks, ...rest);
      };
      socket._write = (...args: unknown[]) => {
        counts.writes++;
        counts.chunks++;
        write(...args);
      };
      return counts;
    }

    it('writes the frames of one turn in one write, one event per frame, in order', async () => {
      const { registry } = setup();
      const pair = await connect();
      registry.add(USER, pair.server);
      const counts = countWrites(pair);
      for (let i = 0; i < 5; i++) registry.sendToUser(USER, delta(i, 10));
      expect(counts.writes).toBe(0);
      await waitFor(() => pair.received.length === 5);
      // One buffer of five whole frames, not a header and a payload each.
      expect(counts).toEqual({ writes: 1, chunks: 1 });
      expect(pair.received.map((event) => event.data.delta)).toEqual(['0', '1', '2', '3', '4'].map((i) => i.padEnd(10, '.')));
    });

    it('counts the frames held in a turn against the bound, and writes them before the close of a connection that passes it', async () => {
      const { registry } = setup({ sendBufferLimitBytes: 64 * 1024, slowClientCloseGraceMs: 10_000 });
      const pair = await connect();
      registry.add(USER, pair.server);
      // All in one turn: nothing is written yet, so only what is held says the bound is reached.
      for (let i = 0; i < 3; i++) expect(registry.sendToUser(USER, delta(i, 20 * 1024))).toBe(1);
      expect(registry.sendToUser(USER, delta(3, 20 * 1024))).toBe(0);

      expect(await pair.clientClosed).toEqual({ code: WS_CLOSE_TRY_AGAIN_LATER, reason: SLOW_CLIENT_CLOSE_REASON });
      expect(pair.received.map((event) => event.data.delta)).toEqual([0, 1, 2].map((i) => delta(i, 20 * 1024).data.delta));
    });

    it('sends nothing held to a connection that closed before the end of the turn', async () => {
      const { registry } = setup();
      const pair = await connect();
      registry.add(USER, pair.server);
      registry.sendToUser(USER, delta(0, 10));
      pair.server.close(1000, 'bye');
      await nextTurn();
      expect(await pair.clientClosed).toEqual({ code: 1000, reason: 'bye' });
      expect(pair.received).toEqual([]);
    });

    it('sends frames of the next turn in a write of their own', async () => {
      const { registry } = setup();
      const pair = await connect();
      registry.add(USER, pair.server);
      const counts = countWrites(pair);
      registry.sendToUser(USER, delta(0, 10));
      await waitFor(() => pair.received.length === 1);
      registry.sendToUser(USER, delta(1, 10));
      registry.sendToUser(USER, delta(2, 10));
      await waitFor(() => pair.received.length === 3);
      expect(counts.writes).toBe(2);
    });
  });

  describe('closeAll', () => {
    it('lets each connection flush what is queued, then closes it with the code and reason', async () => {
      const { registry } = setup();
      const slow = await connect();
      const idle = await connect();
      registry.add(USER, slow.server);
      registry.add(2, idle.server);
      stopReading(slow);
      const sent = await sendUntilStalled(registry, slow);
      const closeCalls: Array<{ code: number | undefined; queued: number }> = [];
      const close = slow.server.close.bind(slow.server);
      jest.spyOn(slow.server, 'close').mockImplementation((code, reason) => {
        closeCalls.push({ code, queued: slow.server.bufferedAmount });
        close(code, reason);
      });

      const closing = registry.closeAll(1001, 'server shutting down', 5_000);
      expect(registry.connectionCount(USER)).toBe(0);
      expect(registry.sendToUser(USER, delta(-1, 10))).toBe(0);
      expect(await idle.clientClosed).toEqual({ code: 1001, reason: 'server shutting down' });
      resumeReading(slow);
      await closing;

      // The first call is the registry's (`ws` calls close again when the client's close arrives).
      expect(closeCalls[0]).toEqual({ code: 1001, queued: 0 });
      expect(await slow.clientClosed).toEqual({ code: 1001, reason: 'server shutting down' });
      expect(slow.received).toHaveLength(sent);
      expect(slow.server.readyState).toBe(WebSocket.CLOSED);
      expect(idle.server.readyState).toBe(WebSocket.CLOSED);
    });

    it('destroys a connection still open at the deadline and resolves', async () => {
      const { registry } = setup();
      const stalled = await connect();
      registry.add(USER, stalled.server);
      stopReading(stalled);
      await sendUntilStalled(registry, stalled);

      const started = Date.now();
      await registry.closeAll(1001, 'server shutting down', 100);
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      await stalled.serverClosed;
      resumeReading(stalled);
      expect((await stalled.clientClosed).code).toBe(1006);
    });

    it('also ends a connection it was already closing for being too slow, by the same deadline', async () => {
      const { registry } = setup({ sendBufferLimitBytes: 64 * 1024, slowClientCloseGraceMs: 60_000 });
      const stalled = await connect();
      registry.add(USER, stalled.server);
      stopReading(stalled);
      while (registry.connectionCount(USER) === 1) {
        registry.sendToUser(USER, delta(0, 16 * 1024));
        await nextTurn();
      }

      await registry.closeAll(1001, 'server shutting down', 100);
      await stalled.serverClosed;
      expect(stalled.server.readyState).toBe(WebSocket.CLOSED);
    });

    it('ends a connection whose close `ws` refuses (a reason over 123 bytes)', async () => {
      const { registry } = setup();
      const pair = await connect();
      registry.add(USER, pair.server);
      await registry.closeAll(1001, 'x'.repeat(200), 1_000);
      await pair.serverClosed;
      expect((await pair.clientClosed).code).toBe(1006);
    });

    it('resolves at once when nobody is connected', async () => {
      await expect(setup().registry.closeAll(1001, 'server shutting down', 60_000)).resolves.toBeUndefined();
    });
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise<void>((resolve) => setTimeout(resolve, 5));
  }
}
