import type { ClientConnection, ClientConnections } from './client-connections';
import type { ClientEvent } from './client-event';
import type { SessionOwners } from './session-owners';

/** What one `SessionAudience.send` reached. */
export interface SessionDelivery {
  /** The connections that took the event. */
  accepted: ClientConnection[];
  /** Of those, the ones still open once every send returned: only they can still answer. */
  open: ClientConnection[];
}

/**
 * Who hears a session's events: every open connection of the session's owner (the user may have
 * the desktop app open twice), and no one else.
 */
export class SessionAudience {
  constructor(
    private readonly owners: SessionOwners,
    private readonly clients: ClientConnections,
    private readonly now: () => number,
  ) {}

  /** Whether the session's owner has at least one open connection. */
  hasConnection(sessionId: number): boolean {
    const owner = this.owners.ownerOf(sessionId);
    return owner !== undefined && this.clients.connectionsOf(owner).length > 0;
  }

  /**
   * Sends the event to every connection of the session's owner, stamped with `executionId`
   * unless `data` names one itself. A connection that does not take it does not stop delivery to
   * the others.
   */
  send(sessionId: number, type: string, data: Record<string, unknown>, executionId: string | undefined): SessionDelivery {
    const owner = this.owners.ownerOf(sessionId);
    if (owner === undefined) return { accepted: [], open: [] };
    const payload = executionId === undefined || 'executionId' in data ? data : { ...data, executionId };
    const event: ClientEvent = { type, sessionId, data: payload, timestamp: this.now() };
    const accepted = this.clients.connectionsOf(owner).filter((connection) => connection.send(event));
    if (accepted.length === 0) return { accepted, open: [] };
    // A connection may have closed from inside `send`.
    const stillOpen = new Set(this.clients.connectionsOf(owner).map((connection) => connection.id));
    return { accepted, open: accepted.filter((connection) => stillOpen.has(connection.id)) };
  }
}
