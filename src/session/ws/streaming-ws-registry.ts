import type { WsEvent } from './ws-event';

/** The part of a WebSocket the registry needs (the `ws` package's `WebSocket` fits). */
export interface WsConnection {
  readonly readyState: number;
  send(data: string): void;
}

const OPEN = 1;

/**
 * Open WebSocket connections by user. Events for a user with no open connection are dropped:
 * runs go on without an audience and the stored messages stay complete.
 */
export class StreamingWsRegistry {
  private readonly byUser = new Map<number, Set<WsConnection>>();

  add(userId: number, connection: WsConnection): void {
    const set = this.byUser.get(userId) ?? new Set<WsConnection>();
    set.add(connection);
    this.byUser.set(userId, set);
  }

  remove(userId: number, connection: WsConnection): void {
    const set = this.byUser.get(userId);
    if (!set) return;
    set.delete(connection);
    if (set.size === 0) this.byUser.delete(userId);
  }

  connectionCount(userId: number): number {
    return this.byUser.get(userId)?.size ?? 0;
  }

  /** Sends to every open connection of the user; returns how many took it. Never throws. */
  sendToUser(userId: number, event: WsEvent): number {
    const set = this.byUser.get(userId);
    if (!set) return 0;
    const frame = JSON.stringify(event);
    let delivered = 0;
    for (const connection of set) {
      if (sendFrame(connection, frame)) delivered++;
    }
    return delivered;
  }
}

/** Sends one serialized frame; a closed or failing socket counts as not delivered. */
export function sendFrame(connection: WsConnection, frame: string): boolean {
  if (connection.readyState !== OPEN) return false;
  try {
    connection.send(frame);
    return true;
  } catch {
    return false;
  }
}
