import type { ChatMessage } from './chat-request';

/** What the model reads for a call whose result the conversation does not hold. */
export const MISSING_TOOL_RESULT = 'Tool execution failed: no result was recorded for this call';

/**
 * The conversation in the shape the strictest provider accepts: every tool call of an assistant
 * message is answered by exactly one tool message, right after it and in call order; a tool
 * message that answers no call of the assistant message before it is dropped; other messages
 * between an assistant message and the next one follow its answers.
 *
 * A conversation the loop built itself is already in this shape and comes back equal. One read
 * back from a store may not be: results stored in the order calls finished, or a process that
 * died mid-round. OpenAI, for one, refuses the whole request for a single unanswered call, and
 * the session could never be used again. Linear in the number of messages.
 */
export function answerEveryToolCall(messages: readonly ChatMessage[]): ChatMessage[] {
  const sequenced: ChatMessage[] = [];
  let index = 0;
  while (index < messages.length) {
    const message = messages[index++];
    if (message.role === 'tool') continue; // answers no call: not after an assistant message with calls
    sequenced.push(message);
    const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : [];
    if (calls.length === 0) continue;

    const callIds = new Set(calls.map((call) => call.id));
    const answers = new Map<string, ChatMessage>();
    const others: ChatMessage[] = [];
    for (; index < messages.length && messages[index].role !== 'assistant'; index++) {
      const next = messages[index];
      if (next.role !== 'tool') {
        others.push(next);
        continue;
      }
      const id = next.tool_call_id;
      if (id !== undefined && callIds.has(id) && !answers.has(id)) answers.set(id, next);
    }
    for (const call of calls) {
      sequenced.push(
        answers.get(call.id) ?? { role: 'tool', tool_call_id: call.id, name: call.function.name, content: MISSING_TOOL_RESULT, is_error: true },
      );
    }
    sequenced.push(...others);
  }
  return sequenced;
}
