import * as path from 'node:path';
import type { WebSocket } from 'ws';
import { BaseTool } from '../src/harness/tool/tool';
import { SLOW_CLIENT_CLOSE_REASON, StreamingWsRegistry, WS_CLOSE_TRY_AGAIN_LATER } from '../src/session/ws/streaming-ws-registry';
import { createSession, startRun, startTestHarness, waitUntil, type TestHarness } from './support/test-harness';
import { withTimeout } from './support/ws-test-client';

/**
 * A product tool with a large result, so one round streams megabytes of events. The round's
 * calls run concurrently; each waits for `pace` before it answers. A real client reads in its own
 * process while the server writes, but here both share one event loop: without pacing, results
 * finishing together would go out in one turn, and a burst larger than the bound overflows any
 * client's buffer, however fast it reads.
 */
class BulkOutputTool extends BaseTool {
  /** Bytes of one result: each becomes a `tool_call_result` frame of about this size. */
  partBytes = 1024 * 1024;
  pace: (part: number) => Promise<void> = () => Promise.resolve();

  getName(): string {
    return 'bulk_output';
  }
  getDescription(): string {
    return 'Returns one large part of a report.';
  }
  getInputSchema(): Record<string, unknown> {
    return { type: 'object', properties: { part: { type: 'integer' } }, required: ['part'] };
  }
  protected override async executeWithUser(argumentsJson: string): Promise<string> {
    const { part } = JSON.parse(argumentsJson) as { part: number };
    await this.pace(part);
    return `part ${part}:`.padEnd(this.partBytes, 'x');
  }
}

/**
 * The `ws` package the server's WebSocket adapter loads; Nest may bring its own copy, so the
 * test's `ws` would not see the server's sockets.
 */
function serverWs(): typeof import('ws') {
  const adapter = path.dirname(require.resolve('@nestjs/platform-ws'));
  return require(require.resolve('ws', { paths: [adapter] })) as typeof import('ws');
}

/** The registry's own write of a turn's frames to a `ws` connection (private: watched here only). */
interface HeldFramesWriter {
  writeHeld(connection: WebSocket, held: unknown): void;
}

/**
 * Records the largest send queue any server-side socket had right after frames were written to it:
 * by the registry, which writes a turn's frames to a `ws` connection itself, or through `send`.
 */
function watchServerSendQueues(): { peak(): number; restore(): void } {
  const prototype = serverWs().WebSocket.prototype;
  const send = prototype.send;
  let peak = 0;
  const sendSpy = jest.spyOn(prototype, 'send').mockImplementation(function (this: WebSocket, ...args: Parameters<WebSocket['send']>) {
    send.apply(this, args);
    peak = Math.max(peak, this.bufferedAmount);
  });
  const registry = StreamingWsRegistry.prototype as unknown as HeldFramesWriter;
  const writeHeld = registry.writeHeld;
  const writeSpy = jest.spyOn(registry, 'writeHeld').mockImplementation(function (this: HeldFramesWriter, connection, held) {
    writeHeld.call(this, connection, held);
    peak = Math.max(peak, connection.bufferedAmount);
  });
  return {
    peak: () => peak,
    restore: () => {
      sendSpy.mockRestore();
      writeSpy.mockRestore();
    },
  };
}

describe('a client that stops reading', () => {
  let t: TestHarness;
  let queues: ReturnType<typeof watchServerSendQueues>;
  let bulkOutput: BulkOutputTool;

  beforeEach(async () => {
    bulkOutput = new BulkOutputTool();
    // Results of a megabyte each reach the clients whole: the output budget is raised past them.
    t = await startTestHarness({ tools: [bulkOutput], env: { HARNESS_TOOL_OUTPUT_MAX_CHARS: String(4 * 1024 * 1024) } });
    queues = watchServerSendQueues();
  });

  afterEach(async () => {
    queues.restore();
    await t.close();
  });

  it('is closed with 1013 before the server queues more than the bound for it; the user\'s other client gets the whole run', async () => {
    const registry = t.harness.app.get(StreamingWsRegistry);
    const limit = registry.sendBufferLimitBytes;
    // Frames well under the bound, so none is the single oversized frame an empty queue may take.
    bulkOutput.partBytes = Math.min(1024 * 1024, Math.floor(limit / 4));
    // The stalled client's kernel buffers take a few MB before the server's queue grows at all;
    // the stream is that, with a wide margin, plus twice the bound.
    const parts = Math.ceil((2 * limit + 16 * 1024 * 1024) / bulkOutput.partBytes);
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', tools: ['bulk_output'] });
    t.provider.script(
      { toolCalls: Array.from({ length: parts }, (_, part) => ({ id: `call_${part}`, name: 'bulk_output', arguments: { part } })) },
      { content: 'All parts are in.' },
    );
    const stalled = await t.connect();
    const reading = await t.connect();
    stalled.pauseReading();
    // Each part is answered once the reading client has the previous one: the stream goes as fast as it reads.
    bulkOutput.pace = async (part) => {
      if (part === 0) return;
      await reading.waitFor((event) => event.type === 'tool_call_result' && event.data.tool_call_id === `call_${part - 1}`, { timeoutMs: 30_000 });
    };

    const executionId = await startRun(t.userA, session.id, 'Write the report.');
    await waitUntil(() => registry.connectionCount(1) === 1, 'the server dropped the stalled client', 30_000);
    // Reading again within the grace, it gets what was queued for it, then the close.
    stalled.resumeReading();
    expect(await withTimeout(stalled.closed, 10_000, 'the stalled client was not closed')).toEqual({
      code: WS_CLOSE_TRY_AGAIN_LATER,
      reason: SLOW_CLIENT_CLOSE_REASON,
    });

    await reading.waitForRunEvent('message_end', executionId, { timeoutMs: 30_000 });
    const results = reading.runEvents(executionId).filter((event) => event.type === 'tool_call_result');
    expect(results.map((event) => event.data.tool_call_id)).toEqual(Array.from({ length: parts }, (_, part) => `call_${part}`));
    expect(results.every((event) => String(event.data.result).length === bulkOutput.partBytes)).toBe(true);
    expect(reading.isOpen).toBe(true);

    // The stalled client got the start of the stream, unbroken, and not all of it.
    const shape = (event: { type: string; data: Record<string, unknown> }) => `${event.type}:${String(event.data.tool_call_id)}`;
    expect(stalled.events.map(shape)).toEqual(reading.events.slice(0, stalled.events.length).map(shape));
    expect(stalled.events.some((event) => event.type === 'message_end')).toBe(false);

    // What the server held for any connection stayed within the bound.
    expect(queues.peak()).toBeGreaterThan(0);
    expect(queues.peak()).toBeLessThanOrEqual(limit);
  }, 60_000);
});
