import { useMemo, useState } from 'preact/hooks';
import type { EventSocket } from '../api/event-socket';
import type { HarnessApi } from '../api/harness-api';
import type { Activity, Session } from '../api/wire';
import { hrefOf } from '../state/route';
import type { SessionFeed } from '../state/session-feed';
import { ActivityLog } from './activity-log';
import { Composer } from './composer';
import { RunView } from './run-view';
import { SessionContext } from './session-context';
import { useFeed } from './use-feed';
import { usePageFocus } from './use-page-focus';

/** One session: its conversation as it streams, its activity log, and what the user can do. */
export function SessionPage({ api, socket, sessionId }: { api: HarnessApi; socket: EventSocket; sessionId: number }) {
  const { feed, state } = useFeed(api, socket, sessionId);
  const heading = usePageFocus<HTMLHeadingElement>();
  const runs = state.conversation.runs;
  const running = runs.at(-1)?.state === 'running';
  const durations = useMemo(() => durationsOf(state.activities), [state.activities]);
  const context = useMemo(() => ({ api, feed, sessionId, durations, answering: state.answering }), [api, feed, sessionId, durations, state.answering]);
  const waiting = pendingApprovals(state.conversation.runs);

  return (
    <SessionContext.Provider value={context}>
      <section aria-labelledby="page-title" class="session-page">
        <div class="page-head">
          <h1 id="page-title" ref={heading} tabIndex={-1}>
            Session {sessionId}
          </h1>
          <div class="actions">
            <p class={`run-state ${running ? 'running' : ''}`} role="status">
              {state.loading ? 'Loading…' : running ? (state.cancelRequested ? 'Cancelling…' : 'Running') : 'Idle'}
            </p>
            {running && <CancelButton feed={feed} disabled={state.cancelRequested} />}
            <a class="button secondary" href={hrefOf({ page: 'tools', sessionId })}>
              Tools of this session
            </a>
          </div>
        </div>
        {state.session && <SessionFacts session={state.session} />}
        {state.problem && (
          <p class="problem" role="alert">
            {state.problem}
          </p>
        )}
        <div role="alert" class="alert-region">
          {waiting > 0 && (
            <p class="attention">
              {waiting === 1 ? 'A tool call waits for your approval.' : `${waiting} tool calls wait for your approval.`}{' '}
              <button type="button" class="link" onClick={focusFirstApproval}>
                Go to it
              </button>
            </p>
          )}
        </div>
        {state.notices.length > 0 && (
          <div class="notices" role="alert">
            <ul>
              {state.notices.map((notice, index) => (
                <li key={index}>{notice}</li>
              ))}
            </ul>
            <button type="button" class="link" onClick={() => feed.dismissNotices()}>
              Dismiss
            </button>
          </div>
        )}
        {state.conversation.firstSeq !== null && state.conversation.firstSeq > 1 && (
          <p class="hint">The event log no longer holds this session’s oldest events; the runs shown start at the oldest it keeps.</p>
        )}
        <div class="session-layout">
          <div class="conversation" aria-label="Conversation" role="region">
            {!state.loading && runs.length === 0 && <p class="muted">No messages yet. Write the first one below.</p>}
            <ol class="runs">
              {runs.map((run, index) => (
                <RunView key={run.executionId} run={run} live={index === runs.length - 1} cancelRequested={state.cancelRequested} />
              ))}
            </ol>
            <Composer feed={feed} disabled={running || state.loading || state.problem !== null} why={composerBlocked(state, running)} />
          </div>
          <ActivityLog activities={state.activities} />
        </div>
      </section>
    </SessionContext.Provider>
  );
}

function CancelButton({ feed, disabled }: { feed: SessionFeed; disabled: boolean }) {
  const [problem, setProblem] = useState<string | null>(null);
  const cancel = () => {
    setProblem(null);
    feed.cancel().catch((error: unknown) => setProblem(`Not cancelled: ${error instanceof Error ? error.message : String(error)}`));
  };
  return (
    <>
      <button type="button" class="danger" onClick={cancel} disabled={disabled}>
        Cancel run
      </button>
      {problem && (
        <span class="problem" role="alert">
          {problem}
        </span>
      )}
    </>
  );
}

function SessionFacts({ session }: { session: Session }) {
  return (
    <dl class="facts">
      <div>
        <dt>Mode</dt>
        <dd>{session.executionMode}</dd>
      </div>
      <div>
        <dt>Permission</dt>
        <dd>{session.permissionLevel}</dd>
      </div>
      <div>
        <dt>Workspace</dt>
        <dd>
          <code>{session.workspace}</code>
        </dd>
      </div>
      <div>
        <dt>Tools</dt>
        <dd>{session.tools === null ? 'all' : session.tools.join(', ') || 'none'}</dd>
      </div>
      <div>
        <dt>MCP servers</dt>
        <dd>{session.mcpServers.length === 0 ? 'none' : session.mcpServers.join(', ')}</dd>
      </div>
    </dl>
  );
}

function composerBlocked(state: SessionFeed['state'], running: boolean): string {
  if (state.problem !== null) return 'The session could not be loaded.';
  if (state.loading) return 'The session is still loading; send once it has.';
  return running ? 'A run is going: send once it has ended, or cancel it.' : '';
}

function durationsOf(activities: Activity[]): ReadonlyMap<string, number> {
  const durations = new Map<string, number>();
  for (const activity of activities) if (activity.durationMs !== undefined) durations.set(activity.toolCallId, activity.durationMs);
  return durations;
}

function pendingApprovals(runs: SessionFeed['state']['conversation']['runs']): number {
  let count = 0;
  for (const run of runs) for (const item of run.items) if (item.kind === 'tool' && item.call.approval?.outcome === 'pending') count++;
  return count;
}

function focusFirstApproval(): void {
  document.querySelector<HTMLButtonElement>('.approval button[data-approve]')?.focus();
}
