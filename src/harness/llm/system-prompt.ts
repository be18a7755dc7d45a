import type { ChatMessage } from './chat-request';

/**
 * The system messages of a conversation as one text, for protocols that take it apart from the
 * turns (Anthropic's `system`, the Responses API's `instructions`): joined by a blank line, the
 * empty ones left out. Empty when there is none.
 */
export function systemPrompt(messages: readonly ChatMessage[]): string {
  return messages
    .filter((m) => m.role === 'system' && m.content)
    .map((m) => m.content)
    .join('\n\n');
}
