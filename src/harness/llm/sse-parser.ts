/** One server-sent event. `event` is absent when the server sent no `event:` field. */
export interface SseEvent {
  event?: string;
  data: string;
  id?: string;
}

/**
 * Incremental parser for `text/event-stream` (WHATWG HTML, "Server-sent events"). Text may be
 * pushed split anywhere, even between the CR and LF of one line ending.
 *
 * An event that is still open when the stream ends is dropped, as the standard says: a stream
 * cut in the middle of an event must not look like a complete event.
 */
export class SseParser {
  private buffer = '';
  /** The previous push ended on CR, so an LF at the start of the next push belongs to it. */
  private pendingCr = false;
  private atStart = true;
  private data: string[] = [];
  private hasData = false;
  private eventName: string | undefined;
  private lastId: string | undefined;

  /** Feeds text and returns the events it completed. */
  push(text: string): SseEvent[] {
    if (this.atStart && text.length > 0) {
      this.atStart = false;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;

    const events: SseEvent[] = [];
    let lineStart = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer.charCodeAt(i);
      if (ch !== 0x0a && ch !== 0x0d) continue;
      const event = this.processLine(this.buffer.slice(lineStart, i));
      if (event) events.push(event);
      if (ch === 0x0d) {
        if (i + 1 < this.buffer.length) {
          if (this.buffer.charCodeAt(i + 1) === 0x0a) i++;
        } else {
          this.pendingCr = true;
        }
      }
      lineStart = i + 1;
    }
    this.buffer = this.buffer.slice(lineStart);
    return events;
  }

  private processLine(line: string): SseEvent | null {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.data.push(value);
        this.hasData = true;
        break;
      case 'event':
        this.eventName = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.lastId = value;
        break;
      default:
        // `retry` and unknown fields carry nothing an LLM client needs.
        break;
    }
    return null;
  }

  private dispatch(): SseEvent | null {
    const hasData = this.hasData;
    const event: SseEvent = { data: this.data.join('\n') };
    if (this.eventName !== undefined && this.eventName !== '') event.event = this.eventName;
    if (this.lastId !== undefined) event.id = this.lastId;
    this.data = [];
    this.hasData = false;
    this.eventName = undefined;
    return hasData ? event : null;
  }
}

/**
 * Parses a byte or text stream into server-sent events. Multi-byte UTF-8 characters split across
 * chunks are decoded correctly.
 */
export async function* parseSse(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  for await (const events of parseSseReads(chunks)) yield* events;
}

/**
 * `parseSse`, a read at a time: for each chunk of the stream that completes events, the list of
 * them (a chunk that completes none yields nothing). One step for all the events of a network
 * read instead of one each.
 */
export async function* parseSseReads(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent[]> {
  const parser = new SseParser();
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of chunks) {
    const events = parser.push(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    if (events.length > 0) yield events;
  }
  const rest = decoder.decode();
  if (rest) {
    const events = parser.push(rest);
    if (events.length > 0) yield events;
  }
}
