import { useContext, useState } from 'preact/hooks';
import { formatTime } from '../format';
import type { ApprovalOutcome, ApprovalView, ToolCallView } from '../state/conversation';
import { SessionContext } from './session-context';

const OUTCOME_TEXT: Record<Exclude<ApprovalOutcome, 'pending'>, string> = {
  approved: 'Approved',
  denied: 'Denied',
  expired: 'Expired: nobody answered in time',
  withdrawn: 'Withdrawn: the run no longer waits for it',
  undelivered: 'Not asked: no client was connected to answer it',
};

/** A call that waits for the user's approval: Approve or Deny, with an optional note. */
export function ApprovalBox({ call, approval }: { call: ToolCallView; approval: ApprovalView }) {
  const context = useContext(SessionContext);
  const [note, setNote] = useState('');
  const noteId = `approval-note-${approval.requestId}`;
  if (approval.outcome !== 'pending') {
    return (
      <div class={`approval resolved ${approval.outcome}`}>
        <p>
          <strong>{OUTCOME_TEXT[approval.outcome]}</strong>
          {approval.message && ` — ${approval.message}`}
        </p>
      </div>
    );
  }
  const sending = context?.answering.has(approval.requestId) ?? false;
  const answer = (approved: boolean) => context?.feed.answerApproval(approval.requestId, approved, note.trim());
  return (
    <div class="approval pending" role="group" aria-label={`Approval for ${call.toolName}`}>
      <p>
        <strong>Needs your approval.</strong> {approval.reason}
        {approval.expiresAt && <span class="muted"> Waits until {formatTime(approval.expiresAt)}.</span>}
      </p>
      <label for={noteId}>Note to the agent (optional)</label>
      <input id={noteId} value={note} onInput={(event) => setNote(event.currentTarget.value)} disabled={sending} />
      <div class="actions">
        <button type="button" data-approve onClick={() => answer(true)} disabled={sending}>
          Approve
        </button>
        <button type="button" class="danger" onClick={() => answer(false)} disabled={sending}>
          Deny
        </button>
        {sending && <span class="muted">Sending…</span>}
      </div>
    </div>
  );
}
