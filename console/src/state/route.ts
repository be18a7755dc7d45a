/** The console's pages, addressed by the URL's hash so that reload and back keep the place. */
export type Route =
  | { page: 'sessions' }
  | { page: 'new-session' }
  | { page: 'session'; sessionId: number }
  | { page: 'tools'; sessionId: number | null };

/** Reads a hash (`#/sessions/12`, `#/tools?session=12`); anything else is the sessions list. */
export function parseRoute(hash: string): Route {
  const [path, query = ''] = hash.replace(/^#/, '').split('?', 2);
  const parts = path.split('/').filter((part) => part !== '');
  if (parts[0] === 'sessions' && parts[1] === 'new' && parts.length === 2) return { page: 'new-session' };
  if (parts[0] === 'sessions' && parts.length === 2 && /^\d{1,15}$/.test(parts[1])) return { page: 'session', sessionId: Number(parts[1]) };
  if (parts[0] === 'tools' && parts.length === 1) {
    const session = new URLSearchParams(query).get('session');
    return { page: 'tools', sessionId: session !== null && /^\d{1,15}$/.test(session) ? Number(session) : null };
  }
  return { page: 'sessions' };
}

export function hrefOf(route: Route): string {
  switch (route.page) {
    case 'sessions':
      return '#/sessions';
    case 'new-session':
      return '#/sessions/new';
    case 'session':
      return `#/sessions/${route.sessionId}`;
    case 'tools':
      return route.sessionId === null ? '#/tools' : `#/tools?session=${route.sessionId}`;
  }
}
