import { createContext } from 'preact';
import type { HarnessApi } from '../api/harness-api';
import type { SessionFeed } from '../state/session-feed';

/** What the cards of a session need beyond their own data. */
export interface SessionContextValue {
  api: HarnessApi;
  feed: SessionFeed;
  sessionId: number;
  /** Recorded durations of finished calls, by call id (from the activities). */
  durations: ReadonlyMap<string, number>;
  /** Approvals and questions answered here, not yet settled by the server. */
  answering: ReadonlySet<string>;
}

export const SessionContext = createContext<SessionContextValue | null>(null);
