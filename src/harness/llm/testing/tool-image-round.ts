import type { ChatImage, ChatRequest, ToolCall } from '../chat-request';

/** A 1×1 red PNG. */
export const RED_PIXEL_PNG: ChatImage = {
  mediaType: 'image/png',
  data: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==',
};

/** A 1×1 transparent GIF. */
export const CLEAR_PIXEL_GIF: ChatImage = {
  mediaType: 'image/gif',
  data: 'R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==',
};

/** A call of the model, with JSON arguments. */
export function toolCall(id: string, name: string, args: Record<string, unknown> = {}): ToolCall {
  return { id, type: 'function', function: { name, arguments: JSON.stringify(args) } };
}

/**
 * A round of two tool results where only the second carries an image (its text names it, as
 * the dispatcher writes it): what every adapter must send as its provider's image, never as text.
 */
export const IMAGE_ROUND: ChatRequest = {
  sessionId: 1,
  messages: [
    { role: 'user', content: 'read the notes and look at the page' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [toolCall('call_notes', 'read_file', { path: 'notes.txt' }), toolCall('call_shot', 'screenshot')],
    },
    { role: 'tool', tool_call_id: 'call_notes', name: 'read_file', content: 'the notes' },
    {
      role: 'tool',
      tool_call_id: 'call_shot',
      name: 'screenshot',
      content: 'Captured the page.\n[image image/png, 70 bytes, attachment att_1]',
      images: [RED_PIXEL_PNG],
      attachments: [{ id: 'att_1', mediaType: 'image/png', bytes: 70 }],
    },
  ],
};

/**
 * The JSON paths (`messages[3].content[1].image_url.url`) of the strings in `value` that contain
 * `data`: where an image's base64 went in a request body.
 */
export function pathsContaining(value: unknown, data: string, at = ''): string[] {
  if (typeof value === 'string') return value.includes(data) ? [at] : [];
  if (Array.isArray(value)) return value.flatMap((item, index) => pathsContaining(item, data, `${at}[${index}]`));
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => pathsContaining(item, data, at === '' ? key : `${at}.${key}`));
  }
  return [];
}
