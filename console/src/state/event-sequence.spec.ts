import type { WsEvent } from '../api/wire';
import { EventSequence } from './event-sequence';

function numbered(seq: number): WsEvent {
  return { type: 'content_delta', sessionId: 1, data: { delta: String(seq) }, timestamp: seq, seq };
}

const seqs = (events: WsEvent[]) => events.map((event) => event.seq);

describe('EventSequence', () => {
  it('releases events in order and drops every repeat', () => {
    const sequence = new EventSequence();
    expect(seqs(sequence.push(numbered(1)))).toEqual([1]);
    expect(seqs(sequence.push(numbered(2)))).toEqual([2]);
    expect(sequence.push(numbered(2))).toEqual([]);
    expect(sequence.push(numbered(1))).toEqual([]);
    expect(sequence.lastSeq).toBe(2);
  });

  it('holds an event that comes early until the ones before it have come', () => {
    const sequence = new EventSequence(10);
    expect(sequence.push(numbered(13))).toEqual([]);
    expect(sequence.push(numbered(12))).toEqual([]);
    expect(sequence.hasGap).toBe(true);
    expect(seqs(sequence.push(numbered(11)))).toEqual([11, 12, 13]);
    expect(sequence.hasGap).toBe(false);
    expect(sequence.lastSeq).toBe(13);
  });

  it('ignores events without a number (replies to frames are not part of the log)', () => {
    const sequence = new EventSequence();
    expect(sequence.push({ type: 'error', sessionId: 1, data: { message: 'x' }, timestamp: 0 })).toEqual([]);
    expect(sequence.lastSeq).toBe(0);
  });

  describe('when the log dropped its oldest events', () => {
    it('starts after them, releasing held events that are now next and forgetting older ones', () => {
      const sequence = new EventSequence();
      sequence.push(numbered(3));
      sequence.push(numbered(42));
      sequence.push(numbered(43));
      expect(seqs(sequence.skipTo(41))).toEqual([42, 43]);
      expect(sequence.lastSeq).toBe(43);
      expect(sequence.hasGap).toBe(false);
      expect(sequence.skipTo(10)).toEqual([]);
    });
  });
});
