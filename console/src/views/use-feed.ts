import { useEffect, useMemo, useState } from 'preact/hooks';
import type { EventSocket } from '../api/event-socket';
import type { HarnessApi } from '../api/harness-api';
import { SessionFeed, type FeedState } from '../state/session-feed';

/** A live feed of the session for as long as the component shows it. */
export function useFeed(api: HarnessApi, socket: EventSocket, sessionId: number): { feed: SessionFeed; state: FeedState } {
  const feed = useMemo(() => new SessionFeed(api, socket, sessionId), [api, socket, sessionId]);
  const [state, setState] = useState(feed.state);
  useEffect(() => {
    setState(feed.state);
    const stopListening = feed.onChange(setState);
    void feed.start();
    return () => {
      stopListening();
      feed.stop();
    };
  }, [feed]);
  return { feed, state };
}
