import type { WsEvent } from '../api/wire';

/**
 * Puts one session's numbered events in order, each exactly once. Events come from two sources
 * that overlap — the HTTP event log and the WebSocket's replay and live stream — and the socket
 * may deliver a live event before the replay that precedes it. An event is released only when
 * every event before it has been: a repeat is dropped, an early one is held until the gap fills.
 */
export class EventSequence {
  private last: number;
  private readonly held = new Map<number, WsEvent>();

  constructor(lastSeq = 0) {
    this.last = lastSeq;
  }

  /** The `seq` of the last event released: what to ask for with `after`. */
  get lastSeq(): number {
    return this.last;
  }

  /** Whether events are held back waiting for earlier ones. */
  get hasGap(): boolean {
    return this.held.size > 0;
  }

  /** Takes an event; answers the events now ready, in order (none, it, or it and held ones). */
  push(event: WsEvent): WsEvent[] {
    const seq = event.seq;
    if (seq === undefined || seq <= this.last || this.held.has(seq)) return [];
    this.held.set(seq, event);
    return this.release();
  }

  /**
   * The log no longer holds the events up to `seq` (retention dropped them): start after them.
   * Held events that are now next are released.
   */
  skipTo(seq: number): WsEvent[] {
    if (seq <= this.last) return [];
    this.last = seq;
    for (const held of [...this.held.keys()]) if (held <= seq) this.held.delete(held);
    return this.release();
  }

  private release(): WsEvent[] {
    const ready: WsEvent[] = [];
    for (let next = this.held.get(this.last + 1); next !== undefined; next = this.held.get(this.last + 1)) {
      this.held.delete(this.last + 1);
      this.last++;
      ready.push(next);
    }
    return ready;
  }
}
