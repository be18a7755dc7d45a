import { StreamingWsRegistry, type WsConnection } from './streaming-ws-registry';
import type { WsEvent } from './ws-event';
import { WsStreamingEventListener } from './ws-streaming-event-listener';

class RecordingSocket implements WsConnection {
  readyState = 1;
  readonly events: WsEvent[] = [];
  send(data: string): void {
    this.events.push(JSON.parse(data) as WsEvent);
  }
}

describe('WsStreamingEventListener progress', () => {
  let clock = 0;
  let socket: RecordingSocket;
  let listener: WsStreamingEventListener;
  const progress = () => socket.events.filter((event) => event.type === 'tool_call_progress').map((event) => event.data);

  beforeEach(() => {
    jest.useFakeTimers();
    clock = 1_000;
    const registry = new StreamingWsRegistry();
    socket = new RecordingSocket();
    registry.add(1, socket);
    listener = new WsStreamingEventListener({
      registry,
      activities: { record: () => ({ id: 1 }) },
      userId: 1,
      sessionId: 2,
      executionId: 'e',
      now: () => clock,
      progressIntervalMs: 100,
    });
  });

  afterEach(() => jest.useRealTimers());

  const advance = (ms: number) => {
    clock += ms;
    jest.advanceTimersByTime(ms);
  };

  it('sends the first report at once, then at most one per interval, the latest one', () => {
    listener.onToolCallProgress('a', { progress: 1, total: 10, message: 'starting' });
    expect(progress()).toEqual([{ tool_call_id: 'a', progress: 1, total: 10, message: 'starting', executionId: 'e' }]);

    for (let step = 2; step <= 6; step++) {
      advance(10);
      listener.onToolCallProgress('a', { progress: step });
    }
    expect(progress()).toHaveLength(1);
    advance(50);
    expect(progress().map((data) => data.progress)).toEqual([1, 6]);
    advance(500);
    expect(progress()).toHaveLength(2);
  });

  it('throttles each call on its own', () => {
    listener.onToolCallProgress('a', { progress: 1 });
    listener.onToolCallProgress('b', { progress: 1 });
    expect(progress().map((data) => data.tool_call_id)).toEqual(['a', 'b']);
  });

  it('drops a held-back report once the call has its result', () => {
    listener.onToolCallStart('a', 'mcp__slow__work', '{}');
    listener.onToolCallProgress('a', { progress: 1 });
    advance(10);
    listener.onToolCallProgress('a', { progress: 2 });
    listener.onToolCallResult('a', 'done', { status: 'success' });
    advance(1_000);
    expect(progress().map((data) => data.progress)).toEqual([1]);
    expect(socket.events.at(-1)?.type).toBe('activity');
  });
});
