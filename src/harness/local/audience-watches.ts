interface Watch {
  connections: Set<string>;
  onGone: () => void;
}

/**
 * Events that wait for an answer from whoever received them (`ask_user_questions`): each watch
 * holds the connections that received its event and calls `onGone` once the last of them has
 * closed — nobody is left who could answer.
 */
export class AudienceWatches {
  private readonly watches = new Set<Watch>();

  /** Starts watching `connectionIds` (at least one); returns the function that stops watching. */
  watch(connectionIds: Iterable<string>, onGone: () => void): () => void {
    const watch: Watch = { connections: new Set(connectionIds), onGone };
    this.watches.add(watch);
    return () => void this.watches.delete(watch);
  }

  /** A connection closed: calls `onGone` of every watch it was the last connection of. */
  connectionClosed(connectionId: string): void {
    for (const watch of [...this.watches]) {
      if (!watch.connections.delete(connectionId) || watch.connections.size > 0) continue;
      this.watches.delete(watch);
      watch.onGone();
    }
  }
}
