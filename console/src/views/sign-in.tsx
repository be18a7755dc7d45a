import { useState } from 'preact/hooks';
import { ApiError, HarnessApi } from '../api/harness-api';
import { usePageFocus } from './use-page-focus';

/**
 * Signing in is giving a token of `HARNESS_TOKENS` (or the one the server printed). It is checked
 * with one API call, then kept in this tab's session storage only.
 */
export function SignIn({ onSignedIn, reason }: { onSignedIn: (token: string) => void; reason: string | null }) {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | null>(reason);
  const [checking, setChecking] = useState(false);
  const heading = usePageFocus<HTMLHeadingElement>();

  const submit = async (event: Event) => {
    event.preventDefault();
    const given = token.trim();
    if (given === '') {
      setProblem('Enter a token.');
      return;
    }
    setChecking(true);
    setProblem(null);
    try {
      await new HarnessApi(given).listSessions(1);
      onSignedIn(given);
    } catch (error) {
      setProblem(error instanceof ApiError && error.status === 401 ? 'The server did not accept this token.' : `Could not reach the server: ${String(error instanceof Error ? error.message : error)}`);
      setChecking(false);
    }
  };

  return (
    <main id="main" class="sign-in">
      <h1 ref={heading} tabIndex={-1}>
        Harness console
      </h1>
      <form onSubmit={submit} class="card" aria-describedby="token-help">
        <label for="token">Token</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck={false} value={token} onInput={(event) => setToken(event.currentTarget.value)} />
        <p id="token-help" class="hint">
          A token of the server's <code>HARNESS_TOKENS</code>, or the one it printed at start. It is kept for this tab only.
        </p>
        {problem && (
          <p class="problem" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" disabled={checking}>
          {checking ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
