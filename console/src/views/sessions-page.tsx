import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, type HarnessApi } from '../api/harness-api';
import type { Session } from '../api/wire';
import { formatTime } from '../format';
import { hrefOf } from '../state/route';
import { usePageFocus } from './use-page-focus';

const PAGE_SIZE = 25;

/** The user's sessions, newest first, a page at a time. */
export function SessionsPage({ api }: { api: HarnessApi }) {
  const [sessions, setSessions] = useState<Session[] | null>(null);
  const [next, setNext] = useState<number | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const heading = usePageFocus<HTMLHeadingElement>();

  const load = useCallback(
    async (before?: number) => {
      setProblem(null);
      try {
        const page = await api.listSessions(PAGE_SIZE, before);
        setSessions((shown) => (before === undefined ? page.sessions : [...(shown ?? []), ...page.sessions]));
        setNext(page.next);
      } catch (error) {
        setProblem(`The sessions could not be loaded: ${messageOf(error)}`);
      }
    },
    [api],
  );
  useEffect(() => void load(), [load]);

  const remove = async (session: Session) => {
    if (!confirm(`Delete session ${session.id} with its messages, activities and workspace?`)) return;
    try {
      await api.deleteSession(session.id);
      setSessions((shown) => shown?.filter((entry) => entry.id !== session.id) ?? null);
    } catch (error) {
      setProblem(error instanceof ApiError && error.status === 409 ? `Session ${session.id} has a run going: cancel it first.` : `Session ${session.id} was not deleted: ${messageOf(error)}`);
    }
  };

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <h1 id="page-title" ref={heading} tabIndex={-1}>
          Sessions
        </h1>
        <div class="actions">
          <a class="button" href={hrefOf({ page: 'new-session' })}>
            New session
          </a>
          <button type="button" class="secondary" onClick={() => void load()}>
            Refresh
          </button>
        </div>
      </div>
      {problem && (
        <p class="problem" role="alert">
          {problem}
        </p>
      )}
      {sessions === null && !problem && <p>Loading…</p>}
      {sessions !== null && sessions.length === 0 && <p>No sessions yet. Start one with “New session”.</p>}
      {sessions !== null && sessions.length > 0 && (
        <table class="sessions">
          <caption class="sr-only">Your sessions, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Session</th>
              <th scope="col">Mode</th>
              <th scope="col">Permission</th>
              <th scope="col">Workspace</th>
              <th scope="col">Created</th>
              <th scope="col">Run</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sessions.map((session) => (
              <tr key={session.id}>
                <th scope="row">
                  <a href={hrefOf({ page: 'session', sessionId: session.id })}>Session {session.id}</a>
                </th>
                <td data-label="Mode">{session.executionMode}</td>
                <td data-label="Permission">{session.permissionLevel}</td>
                <td data-label="Workspace">
                  <code>{session.workspace}</code>
                </td>
                <td data-label="Created">{formatTime(session.createdAt)}</td>
                <td data-label="Run">
                  {session.runStatus === 'waiting' ? (
                    <span class="badge warning">Waiting for you</span>
                  ) : session.activeRun ? (
                    <span class="badge running">Running</span>
                  ) : (
                    <span class="muted">Idle</span>
                  )}
                </td>
                <td>
                  <button type="button" class="link danger" aria-label={`Delete session ${session.id}`} onClick={() => void remove(session)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next !== null && (
        <button type="button" class="secondary" onClick={() => void load(next)}>
          Load older sessions
        </button>
      )}
    </section>
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
