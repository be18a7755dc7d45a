import fc from 'fast-check';
import type { ToolCallDelta } from '../llm/chat-request';
import { ToolCallAccumulator } from './tool-call-accumulator';

type Event = ['start', string, string, string] | ['args', string, string];

function accumulate(deltas: ToolCallDelta[]) {
  const events: Event[] = [];
  const accumulator = new ToolCallAccumulator({
    onStart: (id, name, args) => events.push(['start', id, name, args]),
    onArgumentsDelta: (id, fragment) => events.push(['args', id, fragment]),
  });
  for (const delta of deltas) accumulator.add(delta);
  const calls = accumulator.finish((position) => `generated_${position}`);
  return { events, calls };
}

describe('ToolCallAccumulator', () => {
  it('announces a call once its name is complete, then streams its arguments', () => {
    const { events, calls } = accumulate([
      { index: 0, function: { name: 'read_' } },
      { index: 0, id: 'c1', function: { name: 'file', arguments: '' } },
      { index: 0, function: { arguments: '{"path":' } },
      { index: 0, id: 'c1', function: { arguments: '"a.txt"}' } },
    ]);

    expect(events).toEqual([
      ['start', 'c1', 'read_file', ''],
      ['args', 'c1', '{"path":'],
      ['args', 'c1', '"a.txt"}'],
    ]);
    expect(calls).toEqual([{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } }]);
  });

  it('announces a call without arguments when the next call begins', () => {
    const { events } = accumulate([
      { index: 0, id: 'c1', function: { name: 'task_list' } },
      { index: 1, id: 'c2', function: { name: 'glob' } },
    ]);

    expect(events.slice(0, 1)).toEqual([['start', 'c1', 'task_list', '']]);
    expect(events).toEqual([
      ['start', 'c1', 'task_list', ''],
      ['start', 'c2', 'glob', ''],
    ]);
  });

  it('does not extend a name a provider repeats once the call is announced', () => {
    const { calls, events } = accumulate([
      { index: 0, id: 'c1', function: { name: 'echo', arguments: '{"a":' } },
      { index: 0, id: 'c1', function: { name: 'echo', arguments: '1}' } },
    ]);

    expect(calls[0].function).toEqual({ name: 'echo', arguments: '{"a":1}' });
    expect(events.filter((e) => e[0] === 'start')).toHaveLength(1);
  });

  it('separates calls that share an index but not an id', () => {
    const { calls } = accumulate([
      { index: 0, id: 'a', function: { name: 'echo', arguments: '1' } },
      { index: 0, id: 'b', function: { name: 'echo', arguments: '2' } },
      { index: 0, id: 'a', function: { arguments: '3' } },
    ]);

    expect(calls.map((c) => [c.id, c.function.arguments])).toEqual([
      ['a', '13'],
      ['b', '2'],
    ]);
  });

  it('hands arguments streamed before the id to the announcement', () => {
    const { events } = accumulate([
      { index: 0, function: { name: 'echo', arguments: '{"te' } },
      { index: 0, id: 'late', function: { arguments: 'xt":1}' } },
    ]);

    expect(events).toEqual([
      ['start', 'late', 'echo', '{"te'],
      ['args', 'late', 'xt":1}'],
    ]);
  });

  it('gives id-less calls an id, announces every call, and drops empty fragments', () => {
    const { calls, events } = accumulate([
      { index: 0, function: { name: 'echo', arguments: '{}' } },
      { index: 1 },
      { index: 2, id: 'nameless', function: { arguments: '{}' } },
    ]);

    expect(calls.map((c) => [c.id, c.function.name])).toEqual([
      ['generated_0', 'echo'],
      ['nameless', ''],
    ]);
    expect(events.filter((e) => e[0] === 'start').map((e) => e[1])).toEqual(['generated_0', 'nameless']);
  });
});

/** The accumulator as it was before it became linear: every fragment re-examines every call. */
function referenceAccumulate(deltas: ToolCallDelta[]) {
  interface Pending {
    id: string;
    name: string;
    arguments: string;
    started: boolean;
  }
  const events: Event[] = [];
  const calls: Pending[] = [];
  const byIndex = new Map<number, Pending>();
  const byId = new Map<string, Pending>();
  const start = (call: Pending, evenWithoutName = false) => {
    if (call.started || call.id === '' || (call.name === '' && !evenWithoutName)) return;
    call.started = true;
    events.push(['start', call.id, call.name, call.arguments]);
  };
  for (const delta of deltas) {
    const id = delta.id || undefined;
    let call = id === undefined ? undefined : byId.get(id);
    if (call) byIndex.set(delta.index, call);
    else {
      const current = byIndex.get(delta.index);
      if (current && (id === undefined || current.id === '')) call = current;
      else {
        call = { id: '', name: '', arguments: '', started: false };
        calls.push(call);
        byIndex.set(delta.index, call);
      }
    }
    if (id !== undefined && call.id === '') {
      call.id = id;
      byId.set(id, call);
    }
    for (const other of calls) if (other !== call) start(other);
    if (delta.function?.name && !call.started) call.name += delta.function.name;
    const fragment = delta.function?.arguments;
    if (!fragment) continue;
    start(call);
    call.arguments += fragment;
    if (call.started) events.push(['args', call.id, fragment]);
  }
  return events;
}

describe('ToolCallAccumulator, linear', () => {
  it('announces and streams exactly as the all-calls walk did, for any interleaving of fragments', () => {
    const delta = fc.record({
      index: fc.integer({ min: 0, max: 4 }),
      id: fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'e', ''), { nil: undefined }),
      name: fc.option(fc.constantFrom('re', 'ad', 'glob', ''), { nil: undefined }),
      arguments: fc.option(fc.constantFrom('{', '"x"', '}', ''), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(delta, { maxLength: 40 }), (raw) => {
        const deltas: ToolCallDelta[] = raw.map((d) => ({
          index: d.index,
          ...(d.id !== undefined ? { id: d.id } : {}),
          function: { ...(d.name !== undefined ? { name: d.name } : {}), ...(d.arguments !== undefined ? { arguments: d.arguments } : {}) },
        }));
        const events: Event[] = [];
        const accumulator = new ToolCallAccumulator({
          onStart: (id, name, args) => events.push(['start', id, name, args]),
          onArgumentsDelta: (id, fragment) => events.push(['args', id, fragment]),
        });
        for (const d of deltas) accumulator.add(d);
        expect(events).toEqual(referenceAccumulate(deltas));
      }),
      { numRuns: 500 },
    );
  });

  it('assembles 3,200 calls of a round, each announced once, in order', () => {
    const deltas: ToolCallDelta[] = [];
    for (let i = 0; i < 3_200; i++) {
      deltas.push({ index: i, id: `call_${i}`, function: { name: 'echo', arguments: '' } });
      deltas.push({ index: i, function: { arguments: `{"n":${i}}` } });
    }
    const { events, calls } = accumulate(deltas);
    expect(calls).toHaveLength(3_200);
    expect(events.filter((event) => event[0] === 'start').map((event) => event[1])).toEqual(calls.map((call) => call.id));
    expect(calls[3_199].function.arguments).toBe('{"n":3199}');
  });
});
