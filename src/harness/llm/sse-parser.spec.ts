import fc from 'fast-check';
import { parseSse, parseSseReads, SseParser, type SseEvent } from './sse-parser';

async function parseAll(chunks: Array<string | Uint8Array>): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  async function* source(): AsyncGenerator<string | Uint8Array> {
    yield* chunks;
  }
  for await (const event of parseSse(source())) events.push(event);
  return events;
}

describe('SseParser', () => {
  it('yields data and event names, one event per blank line', async () => {
    const events = await parseAll(['event: ping\ndata: {"a":1}\n\ndata: second\n\n']);
    expect(events).toEqual([{ event: 'ping', data: '{"a":1}' }, { data: 'second' }]);
  });

  it('joins multi-line data with newlines', async () => {
    expect(await parseAll(['data: one\ndata: two\ndata:three\n\n'])).toEqual([{ data: 'one\ntwo\nthree' }]);
  });

  it('ignores comments and unknown fields', async () => {
    const events = await parseAll([': keep-alive\n\nretry: 10\nfoo: bar\ndata: x\n\n: another\n']);
    expect(events).toEqual([{ data: 'x' }]);
  });

  it('accepts CRLF, CR and LF line endings', async () => {
    const events = await parseAll(['data: a\r\n\r\ndata: b\r\rdata: c\n\n']);
    expect(events.map((e) => e.data)).toEqual(['a', 'b', 'c']);
  });

  it('treats a CRLF split between two chunks as one line ending', async () => {
    const events = await parseAll(['data: a\r', '\ndata: b\r', '\n\r', '\n']);
    expect(events).toEqual([{ data: 'a\nb' }]);
  });

  it('keeps an id and strips only one leading space of a value', async () => {
    expect(await parseAll(['id: 7\ndata:  two spaces\n\n'])).toEqual([{ id: '7', data: ' two spaces' }]);
  });

  it('dispatches an event whose data field is empty, but not one without data', async () => {
    expect(await parseAll(['event: only-name\n\ndata\n\n'])).toEqual([{ data: '' }]);
  });

  it('drops an event still open when the stream ends', async () => {
    expect(await parseAll(['data: complete\n\ndata: {"cut":'])).toEqual([{ data: 'complete' }]);
  });

  it('strips a byte-order mark at the start', async () => {
    expect(await parseAll(['\ufeffdata: x\n\n'])).toEqual([{ data: 'x' }]);
  });

  it('decodes a multi-byte character split across byte chunks', async () => {
    const bytes = new TextEncoder().encode('data: héllo 🌍\n\n');
    const cut = bytes.indexOf(0xf0) + 2;
    expect(await parseAll([bytes.slice(0, 8), bytes.slice(8, cut), bytes.slice(cut)])).toEqual([{ data: 'héllo 🌍' }]);
  });

  it('yields the same events however the text is cut', () => {
    const wire =
      'event: a\r\ndata: {"x": "1\\n2"}\r\n\r\n: comment\ndata: line1\ndata: line2\n\ndata: [DONE]\r\r';
    const expected = new SseParser().push(wire);
    expect(expected).toHaveLength(3);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: wire.length - 1 }), { maxLength: 12 }), (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), wire.length];
        const parser = new SseParser();
        const events: SseEvent[] = [];
        for (let i = 0; i + 1 < points.length; i++) events.push(...parser.push(wire.slice(points[i], points[i + 1])));
        expect(events).toEqual(expected);
      }),
    );
  });

  it('gives the events a read at a time through parseSseReads: those each chunk completes, none for a chunk that completes none', async () => {
    async function* source(): AsyncGenerator<string> {
      yield 'data: a\n\ndata: b\n\ndata: c';
      yield '1\n';
      yield '\ndata: d\n\n';
      yield ': only a comment\n';
    }
    const reads: SseEvent[][] = [];
    for await (const read of parseSseReads(source())) reads.push(read);
    expect(reads).toEqual([[{ data: 'a' }, { data: 'b' }], [{ data: 'c1' }, { data: 'd' }]]);
  });
});
