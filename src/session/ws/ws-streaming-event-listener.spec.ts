import { StreamingWsRegistry, type WsConnection } from './streaming-ws-registry';
import type { WsEvent } from './ws-event';
import { isErrorResult, WsStreamingEventListener, type ActivityRecorder, type ToolActivityInput } from './ws-streaming-event-listener';

const USER = 7;
const SESSION = 11;
const EXECUTION = 'exec-1';

class RecordingSocket implements WsConnection {
  readyState = 1;
  readonly events: WsEvent[] = [];
  send(data: string): void {
    this.events.push(JSON.parse(data) as WsEvent);
  }
}

class RecordingActivities implements ActivityRecorder {
  readonly records: ToolActivityInput[] = [];
  fail = false;
  record(input: ToolActivityInput): { id: number } {
    if (this.fail) throw new Error('database is locked');
    this.records.push(input);
    return { id: this.records.length };
  }
}

function setup() {
  const registry = new StreamingWsRegistry();
  const socket = new RecordingSocket();
  registry.add(USER, socket);
  const activities = new RecordingActivities();
  const warnings: string[] = [];
  const listener = new WsStreamingEventListener({
    registry,
    activities,
    userId: USER,
    sessionId: SESSION,
    executionId: EXECUTION,
    now: () => 1_700_000_000_000,
    logger: { warn: (message) => warnings.push(message) },
  });
  const ofType = (type: string) => socket.events.filter((event) => event.type === type);
  return { registry, socket, activities, listener, warnings, ofType };
}

describe('WsStreamingEventListener', () => {
  describe('when a tool result arrives without a status', () => {
    const cases: Array<[string, string, 'success' | 'error']> = [
      ['an object with an error key', '{"error":"file not found"}', 'error'],
      ['an error key with a null value', '{"error":null}', 'error'],
      ['an error key with an object value', '{"error":{"code":404}}', 'error'],
      ['an error key next to other fields', '{"path":"a.txt","error":"denied"}', 'error'],
      ['a non-zero exit code', '{"exit_code":2,"stdout":"","stderr":"oops"}', 'error'],
      ['a non-zero exit code as a string', '{"exit_code":"1"}', 'error'],
      ['an exit code that is not a number', '{"exit_code":"abc"}', 'error'],
      ['a zero exit code', '{"exit_code":0,"stdout":"ok"}', 'success'],
      ['a zero exit code as a string', '{"exit_code":"0"}', 'success'],
      ['a null exit code', '{"exit_code":null}', 'success'],
      ['plain text', 'hello world', 'success'],
      ['plain text that mentions an error', 'error: nothing to see', 'success'],
      ['an empty string', '', 'success'],
      ['invalid JSON', '{"error": ', 'success'],
      ['a JSON array holding an error object', '[{"error":"x"}]', 'success'],
      ['a JSON string', '"error"', 'success'],
      ['a JSON number', '42', 'success'],
      ['JSON null', 'null', 'success'],
      ['an error key nested below the top level', '{"result":{"error":"inner"}}', 'success'],
      ['an object without error or exit code', '{"files":["a","b"]}', 'success'],
    ];

    it.each(cases)('classifies %s by the legacy heuristic', (_label, result, expected) => {
      const { listener, ofType } = setup();
      listener.onToolCallStart('call-1', 'read_file', '{"path":"a.txt"}');
      listener.onToolCallResult('call-1', result);
      const [event] = ofType('tool_call_result');
      expect(event.data).toEqual(
        expect.objectContaining({ tool_call_id: 'call-1', tool_name: 'read_file', result, status: expected, executionId: EXECUTION }),
      );
      expect(isErrorResult(result)).toBe(expected === 'error');
    });

    it('records one activity per result with the same status', () => {
      const { listener, activities, ofType } = setup();
      listener.onToolCallStart('call-1', 'read_file', '{"path":"a.txt"}');
      listener.onToolCallStart('call-2', 'shell', '{"command":"false"}');
      listener.onToolCallResult('call-1', 'contents');
      listener.onToolCallResult('call-2', '{"exit_code":1}');
      expect(activities.records).toEqual([
        expect.objectContaining({ sessionId: SESSION, executionId: EXECUTION, toolCallId: 'call-1', toolName: 'read_file', status: 'SUCCESS' }),
        expect.objectContaining({ sessionId: SESSION, executionId: EXECUTION, toolCallId: 'call-2', toolName: 'shell', status: 'ERROR' }),
      ]);
      expect(ofType('activity').map((event) => event.data.status)).toEqual(['SUCCESS', 'ERROR']);
      expect(ofType('activity')[0].data).toEqual(expect.objectContaining({ id: 1, type: expect.any(String), target: expect.any(String) }));
    });
  });

  describe('when events are emitted', () => {
    it('gives every event the shape of interface.md and the execution id', () => {
      const { listener, socket } = setup();
      listener.onContentDelta('Hel');
      listener.onThinkingStart();
      listener.onThinkingDelta('hmm');
      listener.onThinkingEnd();
      listener.onToolCallStart('call-1', 'glob', '');
      listener.onToolCallArgsDelta('call-1', '{"pattern":"*.ts"}');
      listener.onToolCallResult('call-1', '{"files":[]}');
      listener.onMessageEnd({ promptTokens: 10, completionTokens: 5, totalTokens: 15 });
      listener.onError('provider unavailable');
      expect(socket.events.map((event) => event.type)).toEqual([
        'content_delta',
        'thinking_start',
        'thinking_delta',
        'thinking_end',
        'tool_call_start',
        'tool_call_args_delta',
        'tool_call_result',
        'activity',
        'message_end',
        'error',
      ]);
      for (const event of socket.events) {
        expect(event).toEqual({ type: event.type, sessionId: SESSION, data: expect.any(Object), timestamp: 1_700_000_000_000 });
        expect(event.data.executionId).toBe(EXECUTION);
      }
      expect(socket.events[0].data).toEqual({ delta: 'Hel', executionId: EXECUTION });
      expect(socket.events[5].data).toEqual({ tool_call_id: 'call-1', arguments: '{"pattern":"*.ts"}', executionId: EXECUTION });
      expect(socket.events[8].data).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, executionId: EXECUTION });
      expect(socket.events[9].data).toEqual({ message: 'provider unavailable', executionId: EXECUTION });
    });

    it('sends one tool_call_start per call id', () => {
      const { listener, ofType } = setup();
      listener.onToolCallStart('call-1', 'read_file', '');
      listener.onToolCallStart('call-1', 'read_file', '{"path":"a"}');
      listener.onToolCallStart('call-2', 'read_file', '');
      expect(ofType('tool_call_start').map((event) => event.data.tool_call_id)).toEqual(['call-1', 'call-2']);
      expect(ofType('tool_call_start')[0].data).toEqual({ tool_call_id: 'call-1', tool_name: 'read_file', arguments: '', executionId: EXECUTION });
    });

    it('sends only to the connections of the run owner', () => {
      const { registry, listener, socket } = setup();
      const stranger = new RecordingSocket();
      registry.add(USER + 1, stranger);
      listener.onContentDelta('private');
      expect(socket.events).toHaveLength(1);
      expect(stranger.events).toHaveLength(0);
    });
  });

  describe('when the audience or the store fails', () => {
    it('ignores a failing activity write and still reports the result', () => {
      const { listener, activities, ofType, warnings } = setup();
      activities.fail = true;
      listener.onToolCallStart('call-1', 'shell', '{"command":"ls"}');
      expect(() => listener.onToolCallResult('call-1', '{"exit_code":0}')).not.toThrow();
      expect(ofType('tool_call_result')).toHaveLength(1);
      expect(ofType('activity')).toHaveLength(0);
      expect(warnings.join('\n')).toMatch(/database is locked/);
    });

    it('ignores a socket that throws or is closed', () => {
      const { registry, listener } = setup();
      const broken: WsConnection = {
        readyState: 1,
        send: () => {
          throw new Error('socket hang up');
        },
      };
      const closed = new RecordingSocket();
      closed.readyState = 3;
      registry.add(USER, broken);
      registry.add(USER, closed);
      expect(() => listener.onContentDelta('x')).not.toThrow();
      expect(() => listener.onToolCallResult('never-started', 'plain')).not.toThrow();
      expect(closed.events).toHaveLength(0);
    });

    it('drops events for a user with no connection', () => {
      const registry = new StreamingWsRegistry();
      const activities = new RecordingActivities();
      const listener = new WsStreamingEventListener({ registry, activities, userId: USER, sessionId: SESSION, executionId: EXECUTION });
      listener.onToolCallStart('call-1', 'read_file', '{}');
      listener.onToolCallResult('call-1', '{"error":"x"}');
      expect(activities.records).toEqual([expect.objectContaining({ status: 'ERROR' })]);
    });
  });
});
