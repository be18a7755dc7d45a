import type { ClientEvent } from './client-event';

/** One open client connection, as the LOCAL side sees it. */
export interface ClientConnection {
  /** Unique among the open connections; a closing announces this id. */
  readonly id: string;
  /**
   * Sends one event; returns whether the connection took it (a closed, failing or too-slow
   * connection has not). Never throws.
   */
  send(event: ClientEvent): boolean;
}

/**
 * The users' open client connections, as the LOCAL side needs them: whom a session's events can
 * reach, and when a connection is gone for good. The WebSocket layer implements it over its
 * sockets; `LocalConnections` is the in-memory one.
 */
export interface ClientConnections {
  /** The user's open connections, oldest first. */
  connectionsOf(userId: number): ClientConnection[];
  /** Calls `listener` with the id of every connection that closes from now on. */
  onConnectionClosed(listener: (connectionId: string) => void): void;
}
