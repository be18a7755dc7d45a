import WebSocket from 'ws';

/** A server → client event (interface.md, "WebSocket"). */
export interface WsEvent {
  type: string;
  sessionId: number | null;
  data: Record<string, unknown>;
  timestamp: number;
  /** The event's number in its session's event log (added); none on an event of no session or a reply to a frame. */
  seq?: number;
}

export interface WaitOptions {
  timeoutMs?: number;
  /** Only events at or after this index of `events` count (see `mark()`). */
  since?: number;
}

/** How the server closed a connection. */
export interface CloseInfo {
  code: number;
  reason: string;
}

/**
 * A real `ws` client that keeps every event it receives and lets a test wait for one that
 * matches, with a timeout whose error lists what did arrive.
 */
export class WsTestClient {
  readonly events: WsEvent[] = [];
  /** Frames that were not JSON (the server must never send one). */
  readonly unparsed: string[] = [];
  readonly closed: Promise<CloseInfo>;
  private readonly listeners = new Set<() => void>();
  private roundTrips = 0;

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (raw) => {
      const text = raw.toString();
      try {
        this.events.push(JSON.parse(text) as WsEvent);
      } catch {
        this.unparsed.push(text);
      }
      for (const listener of [...this.listeners]) listener();
    });
    this.closed = new Promise<CloseInfo>((resolve) => {
      socket.once('close', (code, reason) => {
        resolve({ code, reason: reason.toString() });
        for (const listener of [...this.listeners]) listener();
      });
    });
    socket.on('error', () => undefined);
  }

  /** Opens `/ws` (with `?token=` when a token is given) and resolves once the socket is open. */
  static connect(baseUrl: string, token: string | null): Promise<WsTestClient> {
    const socket = new WebSocket(wsUrl(baseUrl, token));
    const client = new WsTestClient(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(client));
      socket.once('error', reject);
      socket.once('close', (code) => reject(new Error(`socket closed before it opened (code ${code})`)));
    });
  }

  /** Opens `/ws` and resolves with how the server closed it (for rejected tokens). */
  static async connectAndAwaitClose(baseUrl: string, token: string | null, timeoutMs = 5_000): Promise<CloseInfo> {
    const client = new WsTestClient(new WebSocket(wsUrl(baseUrl, token)));
    return withTimeout(client.closed, timeoutMs, 'the server did not close the connection');
  }

  get isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  /**
   * Stops reading from the network, as a client that hangs does: the kernel's buffers fill,
   * then the server's send queue for this connection grows.
   */
  pauseReading(): void {
    this.socket.pause();
  }

  /** Reads again: what the server queued arrives, then whatever close it sent. */
  resumeReading(): void {
    this.socket.resume();
  }

  /** The index the next event will get: pass it as `since` to wait only for later events. */
  mark(): number {
    return this.events.length;
  }

  /** Sends an object as JSON, a string as a text frame and a Buffer as a binary frame, both as they are. */
  send(frame: unknown): void {
    if (Buffer.isBuffer(frame)) this.socket.send(frame, { binary: true });
    else this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The first event (at or after `since`) that matches; waits for it if it has not arrived. */
  waitFor(predicate: (event: WsEvent) => boolean, options: WaitOptions = {}): Promise<WsEvent> {
    const { timeoutMs = 5_000, since = 0 } = options;
    const find = () => this.events.slice(since).find(predicate);
    const found = find();
    if (found) return Promise.resolve(found);
    return new Promise<WsEvent>((resolve, reject) => {
      const finish = (error: Error | null, event?: WsEvent) => {
        clearTimeout(timer);
        this.listeners.delete(check);
        if (error) reject(error);
        else resolve(event as WsEvent);
      };
      const check = () => {
        const event = find();
        if (event) finish(null, event);
        else if (this.socket.readyState === WebSocket.CLOSED) finish(new Error(`socket closed while waiting; received: ${this.describe(since)}`));
      };
      const timer = setTimeout(() => finish(new Error(`no matching event within ${timeoutMs} ms; received: ${this.describe(since)}`)), timeoutMs);
      this.listeners.add(check);
    });
  }

  /** Waits for an event of `type` belonging to the run `executionId`. */
  waitForRunEvent(type: string, executionId: string, options: WaitOptions = {}): Promise<WsEvent> {
    return this.waitFor((event) => event.type === type && event.data.executionId === executionId, options);
  }

  /** Every event of the run, in arrival order. */
  runEvents(executionId: string): WsEvent[] {
    return this.events.filter((event) => event.data.executionId === executionId);
  }

  /** Every event of the session, in arrival order. */
  sessionEvents(sessionId: number): WsEvent[] {
    return this.events.filter((event) => event.sessionId === sessionId);
  }

  /** Sends `subscribe` for the session (with `after` when given). */
  subscribe(sessionId: number, after?: number): void {
    this.send(after === undefined ? { type: 'subscribe', sessionId } : { type: 'subscribe', sessionId, after });
  }

  /**
   * Resolves once the server has applied every frame sent before: it answers frames in order, so
   * the `error` it sends for a frame of a made-up type comes after whatever the earlier ones did.
   */
  async roundTrip(options: WaitOptions = {}): Promise<void> {
    const type = `round-trip-${++this.roundTrips}`;
    const since = this.mark();
    this.send({ type });
    await this.waitFor((event) => event.type === 'error' && String(event.data.message).includes(`'${type}'`), { since, ...options });
  }

  /** Closes the socket and waits until it is closed. */
  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    this.socket.close();
    await withTimeout(this.closed, 5_000, 'the socket did not close').catch(() => this.socket.terminate());
  }

  private describe(since: number): string {
    const events = this.events.slice(since);
    return events.length === 0 ? '(nothing)' : events.map((event) => `${event.type}${event.type === 'error' ? `(${String(event.data.message)})` : ''}`).join(', ');
  }
}

function wsUrl(baseUrl: string, token: string | null): string {
  const url = `${baseUrl.replace(/^http/, 'ws')}/ws`;
  return token === null ? url : `${url}?token=${encodeURIComponent(token)}`;
}

/** Rejects with `message` if `promise` has not settled within `timeoutMs`. */
export function withTimeout<T>(promise: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} (after ${timeoutMs} ms)`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
