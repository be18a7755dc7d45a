import { StreamingWsRegistry, type WsConnection } from './streaming-ws-registry';
import type { WsEvent } from './ws-event';
import { WsStreamingEventListener, type ActivityRecorder, type ToolActivityInput } from './ws-streaming-event-listener';

class RecordingSocket implements WsConnection {
  readyState = 1;
  readonly events: WsEvent[] = [];
  send(data: string): void {
    this.events.push(JSON.parse(data) as WsEvent);
  }
}

function setup() {
  const registry = new StreamingWsRegistry();
  const socket = new RecordingSocket();
  registry.add(1, socket);
  const records: ToolActivityInput[] = [];
  const activities: ActivityRecorder = { record: (input) => (records.push(input), { id: records.length }) };
  const listener = new WsStreamingEventListener({ registry, activities, userId: 1, sessionId: 2, executionId: 'e' });
  const results = () => socket.events.filter((event) => event.type === 'tool_call_result').map((event) => event.data);
  return { listener, records, results };
}

describe('WsStreamingEventListener with result meta', () => {
  it('takes the status from meta, even where the text would suggest otherwise', () => {
    const { listener, results, records } = setup();
    listener.onToolCallStart('a', 'write_file', '{"path":"x"}');
    listener.onToolCallStart('b', 'read_file', '{"path":"y"}');
    listener.onToolCallResult('a', "Tool execution failed: tool 'write_file' is not in the allowed tool set", { status: 'error', errorMessage: 'not allowed', durationMs: 0 });
    listener.onToolCallResult('b', '{"error":"this file documents an error format"}', { status: 'success', durationMs: 3 });
    expect(results().map((data) => data.status)).toEqual(['error', 'success']);
    expect(records.map((record) => record.status)).toEqual(['ERROR', 'SUCCESS']);
  });

  it('falls back to the legacy heuristic only without meta', () => {
    const { listener, results } = setup();
    listener.onToolCallResult('a', '{"error":"x"}');
    listener.onToolCallResult('b', 'Tool execution failed: boom');
    expect(results().map((data) => data.status)).toEqual(['error', 'success']);
  });

  it('stores durationMs and errorMessage in the activity metadata', () => {
    const { listener, records } = setup();
    listener.onToolCallStart('a', 'shell', '{"command":"false"}');
    listener.onToolCallResult('a', '{"exit_code":1,"stdout":"","stderr":"no"}', { status: 'error', durationMs: 12.5 });
    listener.onToolCallStart('b', 'read_file', '{"path":"gone.txt"}');
    listener.onToolCallResult('b', '{"error":"no such file"}', { status: 'error', errorMessage: 'no such file', durationMs: 1 });
    listener.onToolCallResult('c', 'plain', { status: 'success' });
    expect(records.map((record) => record.metadata)).toEqual([{ durationMs: 12.5 }, { durationMs: 1, errorMessage: 'no such file' }, {}]);
    expect(records[0].summary).toBe('Command exited with code 1: no');
    expect(records[1].summary).toBe('read_file failed: no such file');
  });

  it('treats a call id used again in a later round as a new call', () => {
    const { listener, results, records } = setup();
    listener.onToolCallStart('call_0', 'read_file', '{"path":"a"}');
    listener.onToolCallResult('call_0', 'a', { status: 'success', durationMs: 1 });
    listener.onToolCallStart('call_0', 'shell', '{"command":"false"}');
    listener.onToolCallResult('call_0', '{"exit_code":1,"stdout":"","stderr":""}', { status: 'error', durationMs: 1 });
    expect(results().map((data) => [data.tool_call_id, data.tool_name, data.status])).toEqual([
      ['call_0', 'read_file', 'success'],
      ['call_0', 'shell', 'error'],
    ]);
    expect(records.map((record) => record.toolName)).toEqual(['read_file', 'shell']);
  });

  it('keeps the event shape of interface.md', () => {
    const { listener, results } = setup();
    listener.onToolCallStart('a', 'glob', '{}');
    listener.onToolCallResult('a', '{"files":[]}', { status: 'success', durationMs: 2 });
    expect(Object.keys(results()[0]).sort()).toEqual(['executionId', 'result', 'status', 'summary', 'tool_call_id', 'tool_name']);
  });

  describe('parsing cost', () => {
    afterEach(() => jest.restoreAllMocks());

    it('never parses a result it was given meta for', () => {
      const { listener } = setup();
      const big = JSON.stringify({ error: 'too big', rows: Array.from({ length: 50_000 }, (_, i) => ({ i })) });
      const shell = JSON.stringify({ exit_code: 2, stdout: 'x'.repeat(100_000), stderr: 'bad' });
      listener.onToolCallStart('a', 'mcp__data__dump', '{}');
      listener.onToolCallStart('b', 'shell', '{"command":"make"}');
      const parse = jest.spyOn(JSON, 'parse');
      listener.onToolCallResult('a', big, { status: 'error', errorMessage: 'too big', durationMs: 5 });
      listener.onToolCallResult('b', shell, { status: 'error', durationMs: 5 });
      expect(parse.mock.calls.filter(([text]) => text === big || text === shell)).toHaveLength(0);
    });
  });
});
