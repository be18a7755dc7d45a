import type { ChatImage, ChatMessage } from './chat-request';

/**
 * The image types every provider Harness speaks reads (OpenAI and Anthropic alike: PNG, JPEG,
 * GIF, WebP). An image of another type would make the provider refuse the whole request.
 */
const READABLE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** A tool message's images as a provider can take them, and the text that goes with them. */
export interface ToolImages {
  /** The images to send, in order, their media types normalized (`image/jpg` is `image/jpeg`). */
  images: ChatImage[];
  /**
   * The message's text, with a sentence for the images that cannot be sent (of a type models
   * do not read), so the model knows they exist. Empty images carry nothing and are dropped.
   */
  text: string;
}

/** The images of a tool message that a provider can be sent, and its text. */
export function toolImagesOf(message: ChatMessage): ToolImages {
  const text = message.content ?? '';
  const images: ChatImage[] = [];
  const unreadable: string[] = [];
  for (const image of message.images ?? []) {
    if (image.data === '') continue;
    const mediaType = normalizeMediaType(image.mediaType);
    if (READABLE_TYPES.has(mediaType)) images.push({ mediaType, data: image.data });
    else unreadable.push(image.mediaType);
  }
  if (unreadable.length === 0) return { images, text };
  const note = `(${countOf(unreadable.length, 'image')} not shown (${[...new Set(unreadable)].join(', ')}): models read PNG, JPEG, GIF and WebP only.)`;
  return { images, text: withNote(text, note) };
}

/** An image as a `data:` URL, the way OpenAI's APIs take inline images. */
export function imageDataUrl(image: ChatImage): string {
  return `data:${image.mediaType};base64,${image.data}`;
}

/**
 * For providers whose tool results carry only text: the sentence added to a result's text when
 * its `count` images follow in a later message of their own.
 */
export function imagesFollowNote(count: number): string {
  return `(${countOf(count, 'image')} of this result ${count === 1 ? 'follows' : 'follow'} after the tool results.)`;
}

/** Opens the message that carries the images of a round's tool results, after those results. */
export const FOLLOWING_IMAGES_HEADER = 'Images returned by the tool calls above:';

/** One piece of the message that carries a round's images: a label or an image. */
export type FollowingImagesPart = { type: 'text'; text: string } | { type: 'image'; image: ChatImage };

/**
 * The pieces of the message that carries the images of a round's tool results, for providers
 * that cannot put them in the results: {@link FOLLOWING_IMAGES_HEADER}, then for each result a
 * label naming its call (`Tool call call_1 (screenshot):`) followed by its images.
 */
export function followingImagesParts(results: Array<{ message: ChatMessage; images: ChatImage[] }>): FollowingImagesPart[] {
  const parts: FollowingImagesPart[] = [{ type: 'text', text: FOLLOWING_IMAGES_HEADER }];
  for (const { message, images } of results) {
    const name = message.name ? ` (${message.name})` : '';
    parts.push({ type: 'text', text: `Tool call ${message.tool_call_id ?? ''}${name}:` });
    for (const image of images) parts.push({ type: 'image', image });
  }
  return parts;
}

/** `text`, then `note` on a line of its own (or `note` alone for an empty text). */
export function withNote(text: string, note: string): string {
  return text === '' ? note : `${text}\n\n${note}`;
}

function normalizeMediaType(mediaType: string): string {
  const type = mediaType.split(';')[0].trim().toLowerCase();
  return type === 'image/jpg' ? 'image/jpeg' : type;
}

function countOf(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
