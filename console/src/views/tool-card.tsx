import { memo } from 'preact/compat';
import { useContext, useState } from 'preact/hooks';
import { formatDuration, oneLine, prettyJson, preview } from '../format';
import type { ToolCallStatus, ToolCallView } from '../state/conversation';
import { ApprovalBox } from './approval-box';
import { AttachmentList } from './attachment-list';
import { SessionContext } from './session-context';

const STATUS_TEXT: Record<ToolCallStatus, string> = {
  running: 'Running',
  success: 'Succeeded',
  error: 'Failed',
  cancelled: 'Cancelled',
};

const RESULT_PREVIEW_CHARS = 600;
const ARGUMENTS_INLINE_CHARS = 100;

/** One tool call: what was called with what, how it is going, and what came back. */
export const ToolCard = memo(function ToolCard({ call }: { call: ToolCallView }) {
  const context = useContext(SessionContext);
  const status = statusText(call);
  const recorded = context?.durations.get(call.callId);
  const duration = recorded ?? (call.endedAt === null ? null : call.endedAt - call.startedAt);
  const args = prettyJson(call.arguments);
  return (
    <article class={`tool-card status-${call.status}`} aria-label={`Tool call ${call.toolName}`} data-call-id={call.callId}>
      <header>
        <h3>
          <code>{call.toolName}</code>
        </h3>
        <p class="tool-status">
          <span class={`badge ${call.status}`}>{status}</span>
          {duration !== null && <span class="duration">{formatDuration(duration)}</span>}
        </p>
      </header>
      {args !== '' && (
        <details class="arguments">
          <summary>
            Arguments <code class="args-inline">{oneLine(call.arguments, ARGUMENTS_INLINE_CHARS)}</code>
          </summary>
          <pre>{args}</pre>
        </details>
      )}
      {call.progress && call.status === 'running' && <Progress progress={call.progress} />}
      {call.approval && <ApprovalBox call={call} approval={call.approval} />}
      {call.desktop && (
        <p class="desktop-request">
          {call.desktop.withdrawnBecause !== null
            ? `The desktop request was withdrawn: ${call.desktop.withdrawnBecause}.`
            : call.status === 'running'
              ? `Runs on the desktop app${call.desktop.needApproval ? ', which asks for approval' : ''}${call.desktop.dangerReason ? ` (${call.desktop.dangerReason})` : ''}.`
              : 'Ran on the desktop app.'}
        </p>
      )}
      {call.result !== null && <Result text={call.result} summary={call.summary} />}
      {call.attachments.length > 0 && <AttachmentList attachments={call.attachments} />}
    </article>
  );
});

function statusText(call: ToolCallView): string {
  if (call.status !== 'running') return STATUS_TEXT[call.status];
  if (call.approval?.outcome === 'pending') return 'Waiting for approval';
  if (call.desktop && call.desktop.withdrawnBecause === null) return 'Waiting for the desktop';
  return STATUS_TEXT.running;
}

function Progress({ progress }: { progress: NonNullable<ToolCallView['progress']> }) {
  const label = progress.total !== undefined ? `${progress.progress} of ${progress.total}` : String(progress.progress);
  return (
    <div class="progress">
      <progress value={progress.total !== undefined ? progress.progress : undefined} max={progress.total} aria-label="Progress" />
      <span class="progress-text">
        {label}
        {progress.message && ` — ${progress.message}`}
      </span>
    </div>
  );
}

function Result({ text, summary }: { text: string; summary: string | null }) {
  const [whole, setWhole] = useState(false);
  const { head, cut } = preview(text, RESULT_PREVIEW_CHARS);
  return (
    <div class="result">
      {summary && <p class="summary">{summary}</p>}
      <pre class="result-text">{whole ? text : head}</pre>
      {cut && (
        <button type="button" class="link" aria-expanded={whole} onClick={() => setWhole(!whole)}>
          {whole ? 'Show less' : `Show the whole result (${text.length.toLocaleString()} characters)`}
        </button>
      )}
    </div>
  );
}
