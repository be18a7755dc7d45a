/** Which user owns which session: a session's events go to its owner alone. */
export class SessionOwners {
  private readonly owners = new Map<number, number>();

  /** Records the owner of a session; later calls replace the owner. */
  bind(sessionId: number, ownerUserId: number): void {
    this.owners.set(sessionId, ownerUserId);
  }

  /** The user who owns the session, or `undefined` if it was never bound. */
  ownerOf(sessionId: number): number | undefined {
    return this.owners.get(sessionId);
  }
}
