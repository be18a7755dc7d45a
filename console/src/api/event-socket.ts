import type { ClientFrame, WsEvent } from './wire';

/** Close code the server uses for a missing or unknown token (interface.md). */
export const WS_UNAUTHORIZED = 4401;

export type SocketStatus = 'connecting' | 'open' | 'reconnecting' | 'unauthorized' | 'stopped';

/** Waits between reconnection attempts: doubling from the first, never more than the last. */
export const RECONNECT_DELAYS_MS = { first: 500, max: 10_000 };

/**
 * The console's one WebSocket (`/ws?token=`). It reconnects after a drop, waiting longer after
 * each failed attempt, and tells its listeners every time it is open again, so that they can
 * subscribe again from the last event they have. A close for a bad token is final.
 */
export class EventSocket {
  private socket: WebSocket | null = null;
  private attempts = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private current: SocketStatus = 'stopped';
  private readonly eventListeners = new Set<(event: WsEvent) => void>();
  private readonly openListeners = new Set<() => void>();
  private readonly statusListeners = new Set<(status: SocketStatus) => void>();

  constructor(private readonly token: string) {}

  get status(): SocketStatus {
    return this.current;
  }

  start(): void {
    if (this.current !== 'stopped') return;
    this.connect('connecting');
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000, 'signed out');
    this.setStatus('stopped');
  }

  /** Sends a frame; false when the socket is not open (the caller says so, or retries on open). */
  send(frame: ClientFrame): boolean {
    if (this.socket?.readyState !== WebSocket.OPEN) return false;
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  onEvent(listener: (event: WsEvent) => void): () => void {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  /** Called on every open, the first and each reconnection. */
  onOpen(listener: () => void): () => void {
    this.openListeners.add(listener);
    return () => this.openListeners.delete(listener);
  }

  onStatus(listener: (status: SocketStatus) => void): () => void {
    this.statusListeners.add(listener);
    return () => this.statusListeners.delete(listener);
  }

  private connect(status: SocketStatus): void {
    this.setStatus(status);
    const url = new URL(`/ws?token=${encodeURIComponent(this.token)}`, location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.onopen = () => {
      if (this.socket !== socket) return;
      this.attempts = 0;
      this.setStatus('open');
      for (const listener of [...this.openListeners]) listener();
    };
    socket.onmessage = (message: MessageEvent) => {
      if (this.socket !== socket || typeof message.data !== 'string') return;
      let event: WsEvent;
      try {
        event = JSON.parse(message.data) as WsEvent;
      } catch {
        return;
      }
      for (const listener of [...this.eventListeners]) listener(event);
    };
    socket.onclose = (close: CloseEvent) => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (close.code === WS_UNAUTHORIZED) {
        this.setStatus('unauthorized');
        return;
      }
      this.scheduleReconnect();
    };
  }

  private scheduleReconnect(): void {
    const delay = Math.min(RECONNECT_DELAYS_MS.first * 2 ** this.attempts, RECONNECT_DELAYS_MS.max);
    this.attempts++;
    this.setStatus('reconnecting');
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect('reconnecting');
    }, delay);
  }

  private setStatus(status: SocketStatus): void {
    if (this.current === status) return;
    this.current = status;
    for (const listener of [...this.statusListeners]) listener(status);
  }
}
