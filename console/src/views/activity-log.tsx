import { memo } from 'preact/compat';
import type { Activity } from '../api/wire';
import { formatDuration, formatTime } from '../format';

/** The session's recorded tool calls, oldest first: what ran, on what, and how it ended. */
export const ActivityLog = memo(function ActivityLog({ activities }: { activities: Activity[] }) {
  return (
    <aside class="activity-log" aria-labelledby="activity-title">
      <h2 id="activity-title">Activity</h2>
      {activities.length === 0 ? (
        <p class="muted">No tool calls yet.</p>
      ) : (
        <ol>
          {activities.map((activity) => (
            <li key={activity.id} class={activity.status === 'SUCCESS' ? 'ok' : 'failed'}>
              <p>
                <span class={`badge ${activity.status === 'SUCCESS' ? 'success' : 'error'}`}>{activity.status === 'SUCCESS' ? 'OK' : 'Error'}</span> <code>{activity.toolName}</code>
                {activity.durationMs !== undefined && <span class="muted"> · {formatDuration(activity.durationMs)}</span>}
              </p>
              <p class="activity-summary">{activity.summary}</p>
              {activity.errorMessage && <p class="activity-error">{activity.errorMessage}</p>}
              <p class="muted small">
                <time dateTime={activity.createdAt}>{formatTime(activity.createdAt)}</time>
              </p>
            </li>
          ))}
        </ol>
      )}
    </aside>
  );
});
