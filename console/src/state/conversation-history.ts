import type { Activity, StoredMessage } from '../api/wire';
import { CANCELLED_RESULT_PREFIX, newToolCall, type Conversation, type RunItem, type RunView, type ToolCallView } from './conversation';

/**
 * Runs the event log does not hold — older than its retention, or from before the server kept
 * one — are rebuilt from the stored conversation: the assistant's texts, its calls and their
 * results, with each call's recorded status and duration. Only finished runs are: a run with no
 * events that is `activeExecutionId` has just started, and its events are on their way.
 */
export function fillFromMessages(conversation: Conversation, messages: StoredMessage[], activities: Activity[], activeExecutionId: string | null): Conversation {
  const empty = new Set(
    conversation.runs.filter((run) => run.items.length === 0 && run.state === 'running' && run.executionId !== activeExecutionId).map((run) => run.executionId),
  );
  if (empty.size === 0) return conversation;
  const byRun = new Map<string, StoredMessage[]>();
  for (const message of messages) {
    if (!message.executionId || !empty.has(message.executionId)) continue;
    byRun.set(message.executionId, [...(byRun.get(message.executionId) ?? []), message]);
  }
  const recorded = new Map(activities.map((activity) => [activity.toolCallId, activity]));
  return {
    ...conversation,
    runs: conversation.runs.map((run) => (empty.has(run.executionId) ? rebuild(run, byRun.get(run.executionId) ?? [], recorded) : run)),
  };
}

function rebuild(run: RunView, messages: StoredMessage[], recorded: ReadonlyMap<string, Activity>): RunView {
  const items: RunItem[] = [];
  let cancelled = false;
  for (const message of messages) {
    const key = `stored-${message.id}`;
    if (message.role === 'assistant') {
      if (message.content) items.push({ kind: 'text', key, text: message.content });
      for (const call of message.toolCalls ?? []) items.push({ kind: 'tool', key: `${key}-${call.id}`, call: storedCall(call, message.createdAt) });
    } else if (message.role === 'tool' && message.toolCallId) {
      const index = findLastIndex(items, (item) => item.kind === 'tool' && item.call.callId === message.toolCallId && item.call.result === null);
      if (index === -1) continue;
      const item = items[index] as Extract<RunItem, { kind: 'tool' }>;
      const result = message.content ?? '';
      const activity = recorded.get(message.toolCallId);
      const status = result.startsWith(CANCELLED_RESULT_PREFIX) ? 'cancelled' : activity?.status === 'ERROR' ? 'error' : 'success';
      if (status === 'cancelled') cancelled = true;
      items[index] = {
        ...item,
        call: { ...item.call, status, result, summary: activity?.summary ?? null, attachments: message.attachments ?? [], endedAt: item.call.startedAt + (activity?.durationMs ?? 0) },
      };
    }
  }
  return { ...run, items, state: 'finished', cancelled };
}

function storedCall(call: NonNullable<StoredMessage['toolCalls']>[number], createdAt: string): ToolCallView {
  return newToolCall(call.id, call.function?.name ?? 'unknown', call.function?.arguments ?? '', 'success', Date.parse(createdAt) || 0);

}

function findLastIndex<T>(items: T[], matches: (item: T) => boolean): number {
  for (let index = items.length - 1; index >= 0; index--) if (matches(items[index])) return index;
  return -1;
}
