import type { ClientConnection, ClientConnections } from './client-connections';
import type { ClientEvent, ClientEventSink } from './client-event';

interface Entry {
  userId: number;
  connection: ClientConnection;
}

/**
 * Client connections kept in memory, each an id, its user and a sink — for in-process clients
 * and tests. A sink that throws has not taken the event.
 */
export class LocalConnections implements ClientConnections {
  private readonly entries = new Map<string, Entry>();
  private readonly closeListeners: Array<(connectionId: string) => void> = [];

  /**
   * Registers an open connection of `userId`. Reusing a connection id replaces the old
   * connection as if it had been removed first.
   */
  add(connectionId: string, userId: number, sink: ClientEventSink): void {
    if (this.entries.has(connectionId)) this.remove(connectionId);
    const send = (event: ClientEvent): boolean => {
      try {
        sink(event);
        return true;
      } catch {
        return false;
      }
    };
    this.entries.set(connectionId, { userId, connection: { id: connectionId, send } });
  }

  /** Forgets a closed connection and announces it; an unknown id changes nothing. */
  remove(connectionId: string): void {
    if (!this.entries.delete(connectionId)) return;
    for (const listener of this.closeListeners) listener(connectionId);
  }

  connectionsOf(userId: number): ClientConnection[] {
    const open: ClientConnection[] = [];
    for (const entry of this.entries.values()) if (entry.userId === userId) open.push(entry.connection);
    return open;
  }

  onConnectionClosed(listener: (connectionId: string) => void): void {
    this.closeListeners.push(listener);
  }
}
