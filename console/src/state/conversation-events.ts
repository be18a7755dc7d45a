import type { Attachment, StoredMessage, WsEvent } from '../api/wire';
import {
  CANCELLED_RESULT_PREFIX,
  newToolCall,
  type ApprovalOutcome,
  type Conversation,
  type Question,
  type QuestionsView,
  type RunItem,
  type RunView,
  type ToolCallView,
} from './conversation';

/** Events that settle a request by its id; the server may send them without the run's id. */
const SETTLING_EVENTS = new Set(['approval_resolved', 'tool_request_cancelled', 'ask_user_questions_cancelled']);

/**
 * Folds one event of the session's log into the conversation. Events must come in `seq` order,
 * each once (see `EventSequence`). An event that names no run settles the request it names,
 * wherever it is; any other is left out (the view shows those apart).
 */
export function applyEvent(conversation: Conversation, event: WsEvent): Conversation {
  const executionId = stringField(event.data, 'executionId');
  const firstSeq = conversation.firstSeq ?? event.seq ?? null;
  if (executionId === null) {
    if (!SETTLING_EVENTS.has(event.type)) return conversation;
    return { firstSeq, runs: conversation.runs.map((run) => applyToRun(run, event)) };
  }
  const known = conversation.runs.some((run) => run.executionId === executionId);
  const runs = known ? conversation.runs : [...conversation.runs, newRun(executionId, null)];
  return {
    firstSeq,
    runs: runs.map((run) => (run.executionId === executionId ? applyToRun(run, event) : run)),
  };
}

/** A run the console just started: shown with its prompt before its first event arrives. */
export function startRun(conversation: Conversation, executionId: string, prompt: string): Conversation {
  if (conversation.runs.some((run) => run.executionId === executionId)) return conversation;
  return { ...conversation, runs: [...conversation.runs, newRun(executionId, prompt)] };
}

/**
 * Gives each run its prompt from the stored messages (the event log does not hold the user's
 * messages). Runs the log does not know yet are added in message order, so that they keep
 * their place before later runs' events arrive.
 */
export function withPrompts(conversation: Conversation, messages: StoredMessage[]): Conversation {
  const prompts = new Map<string, string>();
  for (const message of messages) {
    if (message.role === 'user' && message.executionId && !prompts.has(message.executionId)) prompts.set(message.executionId, message.content ?? '');
  }
  const runs = conversation.runs.map((run) => {
    const prompt = prompts.get(run.executionId);
    return prompt === undefined || run.prompt === prompt ? run : { ...run, prompt };
  });
  const known = new Set(runs.map((run) => run.executionId));
  for (const [executionId, prompt] of prompts) if (!known.has(executionId)) runs.push(newRun(executionId, prompt));
  return { ...conversation, runs };
}

/**
 * The server says no run is going, yet these runs never ended in the log: the server stopped
 * during them (a crash, a restart). A later end event still wins.
 */
export function markInterrupted(conversation: Conversation): Conversation {
  if (!conversation.runs.some((run) => run.state === 'running')) return conversation;
  return {
    ...conversation,
    runs: conversation.runs.map((run) =>
      run.state === 'running' ? { ...closeWaiting(run), state: 'interrupted', error: 'The run did not finish: the server stopped during it.' } : run,
    ),
  };
}

function newRun(executionId: string, prompt: string | null): RunView {
  return { executionId, prompt, items: [], state: 'running', error: null, usage: null, cancelled: false };
}

function applyToRun(run: RunView, event: WsEvent): RunView {
  const data = event.data;
  const key = `${event.type}-${event.seq ?? run.items.length}`;
  switch (event.type) {
    case 'content_delta':
      return appendText(run, 'text', key, stringField(data, 'delta') ?? '');
    case 'thinking_start':
      return { ...run, items: [...run.items, { kind: 'thinking', key, text: '', done: false }] };
    case 'thinking_delta':
      return appendText(run, 'thinking', key, stringField(data, 'delta') ?? '');
    case 'thinking_end':
      return updateLast(run, (item) => item.kind === 'thinking' && !item.done, (item) => ({ ...item, done: true }) as RunItem);
    case 'tool_call_start':
      return addCall(run, key, stringField(data, 'tool_call_id') ?? key, stringField(data, 'tool_name') ?? 'unknown', stringField(data, 'arguments') ?? '', event.timestamp);
    case 'tool_call_args_delta':
      return updateCall(run, stringField(data, 'tool_call_id'), (call) =>
        call.status === 'running' ? { ...call, arguments: call.arguments + (stringField(data, 'arguments') ?? '') } : call,
      );
    case 'tool_call_progress':
      return updateCall(run, stringField(data, 'tool_call_id'), (call) => ({ ...call, progress: progressOf(data) }));
    case 'tool_call_result':
      return applyResult(run, key, event);
    case 'tool_request':
      return applyDesktopRequest(run, key, event);
    case 'tool_request_cancelled':
      return mapRunCalls(run, (call) =>
        call.desktop?.requestId === stringField(data, 'requestId') ? { ...call, desktop: { ...call.desktop, withdrawnBecause: stringField(data, 'reason') ?? 'withdrawn' } } : call,
      );
    case 'approval_request':
      return applyApprovalRequest(run, key, event);
    case 'approval_resolved':
      return mapRunCalls(run, (call) =>
        call.approval?.requestId === stringField(data, 'requestId')
          ? { ...call, approval: { ...call.approval, outcome: outcomeOf(data.outcome), message: stringField(data, 'message') } }
          : call,
      );
    case 'ask_user_questions':
      return { ...run, items: [...run.items, { kind: 'questions', key, questions: questionsOf(data) }] };
    case 'ask_user_questions_cancelled':
      return updateQuestions(run, (questions) => questions.requestId === stringField(data, 'requestId') && questions.state === 'pending', 'cancelled', undefined);
    case 'message_end':
      return { ...closeWaiting(run), state: 'finished', error: null, usage: usageOf(data) };
    case 'error':
      if (data.final === true) return { ...closeWaiting(run), state: 'failed', error: stringField(data, 'message') ?? 'The run failed.' };
      return { ...run, items: [...run.items, { kind: 'notice', key, message: stringField(data, 'message') ?? 'error' }] };
    default:
      return run;
  }
}

function appendText(run: RunView, kind: 'text' | 'thinking', key: string, delta: string): RunView {
  const last = run.items.at(-1);
  if (last && last.kind === kind && !(last.kind === 'thinking' && last.done)) {
    return { ...run, items: [...run.items.slice(0, -1), { ...last, text: last.text + delta }] };
  }
  const item: RunItem = kind === 'text' ? { kind, key, text: delta } : { kind, key, text: delta, done: false };
  return { ...run, items: [...run.items, item] };
}

function addCall(run: RunView, key: string, callId: string, toolName: string, args: string, at: number): RunView {
  const call = newToolCall(callId, toolName, args, 'running', at);

  return { ...run, items: [...run.items, { kind: 'tool', key, call }] };
}

function applyResult(run: RunView, key: string, event: WsEvent): RunView {
  const data = event.data;
  const callId = stringField(data, 'tool_call_id');
  let withCard = run;
  if (!findCall(run, callId)) withCard = addCall(run, key, callId ?? key, stringField(data, 'tool_name') ?? 'unknown', '', event.timestamp);
  const result = stringField(data, 'result') ?? '';
  const cancelled = result.startsWith(CANCELLED_RESULT_PREFIX);
  const status = cancelled ? 'cancelled' : data.status === 'error' ? 'error' : 'success';
  let next = updateCall(withCard, callId ?? key, (call) => ({
    ...call,
    status,
    result,
    summary: stringField(data, 'summary'),
    attachments: attachmentsOf(data.attachments),
    endedAt: event.timestamp,
    progress: null,
  }));
  if (cancelled) next = { ...next, cancelled: true };
  const toolName = stringField(data, 'tool_name') ?? findCall(withCard, callId)?.toolName;
  if (toolName !== 'ask_user_questions') return next;
  // The model read the answers (or why there were none): the oldest open questions are settled.
  const answers = answersOf(result);
  return updateQuestions(next, (questions) => questions.state === 'pending', answers === undefined ? 'cancelled' : 'answered', answers, true);
}

function applyDesktopRequest(run: RunView, key: string, event: WsEvent): RunView {
  const data = event.data;
  const toolName = stringField(data, 'toolName') ?? 'unknown';
  const desktop = {
    requestId: stringField(data, 'requestId') ?? key,
    needApproval: data.needApproval === true,
    dangerReason: stringField(data, 'dangerReason'),
    withdrawnBecause: null,
  };
  // The request names no call: it belongs to the oldest running call of that tool without one.
  const target = run.items.find((item) => item.kind === 'tool' && item.call.toolName === toolName && item.call.status === 'running' && item.call.desktop === null);
  if (target && target.kind === 'tool') return updateItem(run, target.key, { ...target, call: { ...target.call, desktop } });
  const added = addCall(run, key, key, toolName, jsonText(data.arguments), event.timestamp);
  return updateCall(added, key, (call) => ({ ...call, desktop }));
}

function applyApprovalRequest(run: RunView, key: string, event: WsEvent): RunView {
  const data = event.data;
  const callId = stringField(data, 'toolCallId') ?? key;
  const approval = {
    requestId: stringField(data, 'requestId') ?? key,
    reason: stringField(data, 'reason') ?? '',
    outcome: 'pending' as const,
    message: null,
    expiresAt: stringField(data, 'expiresAt'),
  };
  const withCard = findCall(run, callId) ? run : addCall(run, key, callId, stringField(data, 'toolName') ?? 'unknown', jsonText(data.arguments), event.timestamp);
  return updateCall(withCard, callId, (call) => ({ ...call, approval }));
}

/** The run ended: questions nobody answered are closed, calls still shown as running are not. */
function closeWaiting(run: RunView): RunView {
  return {
    ...run,
    items: run.items.map((item) => {
      if (item.kind === 'questions' && item.questions.state === 'pending') return { ...item, questions: { ...item.questions, state: 'closed' } };
      if (item.kind === 'thinking' && !item.done) return { ...item, done: true };
      return item;
    }),
  };
}

function findCall(run: RunView, callId: string | null): ToolCallView | undefined {
  for (let index = run.items.length - 1; index >= 0; index--) {
    const item = run.items[index];
    if (item.kind === 'tool' && item.call.callId === callId) return item.call;
  }
  return undefined;
}

/** Updates the latest card of the call id (a provider may use an id again after its result). */
function updateCall(run: RunView, callId: string | null, update: (call: ToolCallView) => ToolCallView): RunView {
  return updateLast(run, (item) => item.kind === 'tool' && item.call.callId === callId, (item) => (item.kind === 'tool' ? { ...item, call: update(item.call) } : item));
}

function mapRunCalls(run: RunView, update: (call: ToolCallView) => ToolCallView): RunView {
  let changed = false;
  const items = run.items.map((item) => {
    if (item.kind !== 'tool') return item;
    const call = update(item.call);
    if (call === item.call) return item;
    changed = true;
    return { ...item, call };
  });
  return changed ? { ...run, items } : run;
}

function updateQuestions(run: RunView, matches: (questions: QuestionsView) => boolean, state: QuestionsView['state'], answers: unknown, firstOnly = false): RunView {
  let done = false;
  const items = run.items.map((item) => {
    if (done || item.kind !== 'questions' || !matches(item.questions)) return item;
    if (firstOnly) done = true;
    return { ...item, questions: { ...item.questions, state, answers: answers ?? item.questions.answers } };
  });
  return { ...run, items };
}

function updateLast(run: RunView, matches: (item: RunItem) => boolean, update: (item: RunItem) => RunItem): RunView {
  for (let index = run.items.length - 1; index >= 0; index--) {
    if (!matches(run.items[index])) continue;
    const items = [...run.items];
    items[index] = update(items[index]);
    return { ...run, items };
  }
  return run;
}

function updateItem(run: RunView, key: string, replacement: RunItem): RunView {
  return { ...run, items: run.items.map((item) => (item.key === key ? replacement : item)) };
}

function stringField(data: Record<string, unknown>, field: string): string | null {
  const value = data[field];
  return typeof value === 'string' ? value : null;
}

function progressOf(data: Record<string, unknown>): ToolCallView['progress'] {
  const progress = typeof data.progress === 'number' ? data.progress : 0;
  const view: NonNullable<ToolCallView['progress']> = { progress };
  if (typeof data.total === 'number') view.total = data.total;
  if (typeof data.message === 'string') view.message = data.message;
  return view;
}

function usageOf(data: Record<string, unknown>): RunView['usage'] {
  const number = (value: unknown) => (typeof value === 'number' ? value : 0);
  return { promptTokens: number(data.prompt_tokens), completionTokens: number(data.completion_tokens), totalTokens: number(data.total_tokens) };
}

function outcomeOf(value: unknown): ApprovalOutcome {
  return value === 'approved' || value === 'denied' || value === 'expired' || value === 'withdrawn' || value === 'undelivered' ? value : 'withdrawn';
}

function attachmentsOf(value: unknown): Attachment[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (entry): entry is Attachment => typeof entry === 'object' && entry !== null && typeof entry.id === 'string' && typeof entry.mediaType === 'string',
  );
}

function questionsOf(data: Record<string, unknown>): QuestionsView {
  const list = Array.isArray(data.questions) ? data.questions : [];
  const questions: Question[] = list
    .filter((entry): entry is Record<string, unknown> => typeof entry === 'object' && entry !== null && typeof entry.question === 'string')
    .map((entry) => ({
      question: entry.question as string,
      ...(Array.isArray(entry.options) && { options: entry.options.filter((option): option is string => typeof option === 'string') }),
      ...(entry.multiSelect === true && { multiSelect: true }),
    }));
  return { requestId: stringField(data, 'requestId') ?? '', questions, state: 'pending', answers: undefined };
}

/** The answers in an `ask_user_questions` result (`{"answers": ...}`); undefined for an error. */
function answersOf(result: string): unknown {
  try {
    const parsed = JSON.parse(result) as unknown;
    return typeof parsed === 'object' && parsed !== null && 'answers' in parsed ? (parsed as { answers: unknown }).answers : undefined;
  } catch {
    return undefined;
  }
}

function jsonText(value: unknown): string {
  if (typeof value === 'string') return value;
  return value === undefined ? '' : JSON.stringify(value);
}
