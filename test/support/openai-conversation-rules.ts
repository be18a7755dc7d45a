/** The part of a Chat Completions message these rules read. */
interface RuleMessage {
  role: string;
  tool_calls?: Array<{ id: string }>;
  tool_call_id?: string;
}

/**
 * Why OpenAI's Chat Completions API would refuse this conversation with a 400, in its own words,
 * or null when it would take it: an assistant message with `tool_calls` must be followed at once
 * by one tool message per call, and a tool message must answer a call of the assistant message
 * right before its run of tool messages.
 */
export function openAiConversationProblem(messages: readonly RuleMessage[]): string | null {
  let open: Set<string> | null = null;
  let answerable = new Set<string>();
  for (const message of messages) {
    if (message.role === 'tool') {
      if (!message.tool_call_id || !answerable.has(message.tool_call_id)) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'.";
      }
      open?.delete(message.tool_call_id);
      continue;
    }
    if (open !== null && open.size > 0) return unanswered(open);
    open = null;
    answerable = new Set();
    if (message.role === 'assistant' && message.tool_calls && message.tool_calls.length > 0) {
      answerable = new Set(message.tool_calls.map((call) => call.id));
      open = new Set(answerable);
    }
  }
  return open !== null && open.size > 0 ? unanswered(open) : null;
}

function unanswered(ids: Set<string>): string {
  return (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
    `The following tool_call_ids did not have response messages: ${[...ids].join(', ')}`
  );
}
