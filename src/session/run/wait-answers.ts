import type { ResumedAnswer } from '../../harness/tool/resumed-answers';
import type { WaitRecord } from '../persistence/wait-repository';

/**
 * What a stored wait that expired answers: the result its call gets when no answer came in
 * time, the same words the live wait would have used (an approval's expiry, a question's
 * time-out, a desktop request's time-out).
 */
export function expiredAnswer(wait: WaitRecord): ResumedAnswer {
  const waitedMs = wait.expiresAt - wait.createdAt;
  switch (wait.kind) {
    case 'approval':
      return { kind: 'approval', outcome: 'expired', reason: approvalReason(wait), message: `no answer within ${waitedMs} ms` };
    case 'question':
      return { kind: 'question', error: `No answer to the questions within ${waitedMs} ms` };
    case 'local_tool':
      return { kind: 'local_tool', result: JSON.stringify({ error: `Local tool '${wait.toolName}' timed out after ${waitedMs} ms` }) };
  }
}

/** Why the stored approval request asked, as its event said. */
export function approvalReason(wait: WaitRecord): string {
  return typeof wait.eventData.reason === 'string' ? wait.eventData.reason : 'approval required';
}

/** Whether a stored answer is one the dispatcher can settle a call with. */
export function isResumedAnswer(value: unknown): value is ResumedAnswer {
  if (value === null || typeof value !== 'object') return false;
  const kind = (value as { kind?: unknown }).kind;
  return kind === 'approval' || kind === 'question' || kind === 'local_tool';
}
