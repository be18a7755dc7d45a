import type { WsConnection } from '../streaming-ws-registry';

/**
 * A socket double for the registry and the gateway: it records the frames it is sent and how it
 * was closed. `bufferedAmount` stands for what its client has not read yet; a close completes at
 * once, as with a peer that answers it.
 */
export class FakeWsConnection implements WsConnection {
  readyState = 1;
  readonly frames: string[] = [];
  readonly closes: Array<{ code: number; reason: string }> = [];
  terminated = false;

  constructor(public bufferedAmount = 0) {}

  send(data: string): void {
    this.frames.push(data);
  }

  close(code: number, reason: string): void {
    this.closes.push({ code, reason });
    this.readyState = 3;
  }

  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
  }

  /** The gateway listens for socket errors; the double has none. */
  on(): this {
    return this;
  }

  /** The frames sent, parsed. */
  events(): Array<{ type: string; sessionId: number | null; data: Record<string, unknown> }> {
    return this.frames.map((frame) => JSON.parse(frame) as { type: string; sessionId: number | null; data: Record<string, unknown> });
  }
}
