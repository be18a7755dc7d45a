import type { SocketStatus } from '../api/event-socket';
import { hrefOf, type Route } from '../state/route';

const STATUS_TEXT: Record<SocketStatus, string> = {
  connecting: 'Connecting…',
  open: 'Live',
  reconnecting: 'Reconnecting…',
  unauthorized: 'Token refused',
  stopped: 'Offline',
};

/** The top bar: where you are, whether live updates flow, and signing out. */
export function AppHeader({ route, status, onSignOut }: { route: Route; status: SocketStatus; onSignOut: () => void }) {
  const current = (page: Route['page'][]) => (page.includes(route.page) ? 'page' : undefined);
  return (
    <header class="app-header">
      <a class="brand" href={hrefOf({ page: 'sessions' })}>
        Harness
      </a>
      <nav aria-label="Main">
        <ul>
          <li>
            <a href={hrefOf({ page: 'sessions' })} aria-current={current(['sessions', 'session', 'new-session'])}>
              Sessions
            </a>
          </li>
          <li>
            <a href={hrefOf({ page: 'tools', sessionId: null })} aria-current={current(['tools'])}>
              Tools
            </a>
          </li>
        </ul>
      </nav>
      <p class={`connection connection-${status}`} role="status">
        <span class="sr-only">Connection: </span>
        {STATUS_TEXT[status]}
      </p>
      <button type="button" class="secondary" onClick={onSignOut}>
        Sign out
      </button>
    </header>
  );
}
