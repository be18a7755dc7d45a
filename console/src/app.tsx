import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { EventSocket, type SocketStatus } from './api/event-socket';
import { HarnessApi } from './api/harness-api';
import { forgetToken, loadToken, saveToken } from './state/token-store';
import { AppHeader } from './views/app-header';
import { NewSessionPage } from './views/new-session-page';
import { SessionPage } from './views/session-page';
import { SessionsPage } from './views/sessions-page';
import { SignIn } from './views/sign-in';
import { ToolsPage } from './views/tools-page';
import { useRoute } from './views/use-route';

/** The console: the sign-in form until a token is given, then the signed-in pages. */
export function App() {
  const [token, setToken] = useState(loadToken);
  const [signedOutBecause, setSignedOutBecause] = useState<string | null>(null);
  const signIn = useCallback((accepted: string) => {
    saveToken(accepted);
    setSignedOutBecause(null);
    setToken(accepted);
  }, []);
  const signOut = useCallback((reason: string | null) => {
    forgetToken();
    setSignedOutBecause(reason);
    setToken(null);
  }, []);
  if (token === null) return <SignIn onSignedIn={signIn} reason={signedOutBecause} />;
  return <SignedIn key={token} token={token} onSignOut={signOut} />;
}

const REJECTED_TOKEN = 'The server no longer accepts this token. Sign in again.';

function SignedIn({ token, onSignOut }: { token: string; onSignOut: (reason: string | null) => void }) {
  const route = useRoute();
  const api = useMemo(() => new HarnessApi(token, () => onSignOut(REJECTED_TOKEN)), [token, onSignOut]);
  const socket = useMemo(() => new EventSocket(token), [token]);
  const [status, setStatus] = useState<SocketStatus>(socket.status);
  useEffect(() => {
    const stopListening = socket.onStatus((next) => {
      setStatus(next);
      if (next === 'unauthorized') onSignOut(REJECTED_TOKEN);
    });
    socket.start();
    return () => {
      stopListening();
      socket.stop();
    };
  }, [socket, onSignOut]);

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <AppHeader route={route} status={status} onSignOut={() => onSignOut(null)} />
      <main id="main">
        {route.page === 'sessions' && <SessionsPage api={api} />}
        {route.page === 'new-session' && <NewSessionPage api={api} />}
        {route.page === 'session' && <SessionPage key={route.sessionId} api={api} socket={socket} sessionId={route.sessionId} />}
        {route.page === 'tools' && <ToolsPage key={String(route.sessionId)} api={api} sessionId={route.sessionId} />}
      </main>
    </>
  );
}
