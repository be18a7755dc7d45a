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
