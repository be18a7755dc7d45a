import { ScriptedLlmAdapter } from '../src/harness/llm/scripted-llm-adapter';
import { patternBytes, pngOfSize, PIXEL_PNG } from '../src/demo/mcp-content-server';
import { contentMcpServerConfig, requireBuiltContentMcpServer } from './support/content-mcp-server';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';
import type { WsEvent } from './support/ws-test-client';

interface Attachment {
  id: string;
  mediaType: string;
  bytes: number;
}

const CALLS: Array<{ id: string; tool: string; arguments: Record<string, unknown> }> = [
  { id: 'call_text', tool: 'text', arguments: { text: 'plain words' } },
  { id: 'call_pixel', tool: 'pixel', arguments: { caption: 'one pixel' } },
  { id: 'call_structured', tool: 'structured', arguments: { data: { rows: 2 }, text: 'two rows' } },
  { id: 'call_fail', tool: 'fail', arguments: { message: 'the server said no' } },
  { id: 'call_error_key', tool: 'structured', arguments: { data: { error: 'only a field', exit_code: 3 } } },
  { id: 'call_blob', tool: 'blob', arguments: { bytes: 512, uri: 'file:///data/blob.bin' } },
  { id: 'call_big_text', tool: 'large_text', arguments: { bytes: 3 * 1024 * 1024 } },
  { id: 'call_big_image', tool: 'image', arguments: { bytes: 3 * 1024 * 1024 } },
];

/**
 * A real MCP server process returning every kind of content, through a whole run: what the
 * model read, what the WebSocket showed, what was stored, audited and served agree.
 */
describe('structured tool results end to end', () => {
  let t: TestHarness;

  beforeAll(() => requireBuiltContentMcpServer());

  afterEach(async () => {
    await t.close();
  });

  async function run(env: Record<string, string> = {}) {
    const script = { rounds: [{ toolCalls: CALLS.map((call) => ({ id: call.id, name: `mcp__content__${call.tool}`, arguments: call.arguments })) }, { content: 'seen' }] };
    t = await startTestHarness({
      extraMcpServers: [contentMcpServerConfig(3, 'content') as unknown as Record<string, unknown>],
      env: { LLM_PROTOCOL: 'scripted', LLM_SCRIPT: JSON.stringify(script), ...env },
    });
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [3] });
    const client = await t.connect();
    const executionId = await startRun(t.userA, session.id, 'show me everything');
    await client.waitForRunEvent('message_end', executionId, { timeoutMs: 20_000 });
    const events = new Map(
      client
        .runEvents(executionId)
        .filter((event) => event.type === 'tool_call_result')
        .map((event): [string, WsEvent] => [String(event.data.tool_call_id), event]),
    );
    const messages = (await t.userA.get<Array<Record<string, unknown>>>(`/api/sessions/${session.id}/messages`)).body;
    const stored = new Map(messages.filter((m) => m.role === 'tool').map((m): [string, Record<string, unknown>] => [String(m.toolCallId), m]));
    const activities = (await t.userA.get<Array<Record<string, unknown>>>(`/api/sessions/${session.id}/activities`)).body;
    const audited = new Map(activities.map((a): [string, Record<string, unknown>] => [String(a.toolCallId), a]));
    const [, second] = t.harness.app.get(ScriptedLlmAdapter).received(session.id);
    const modelRead = new Map(second.messages.filter((m) => m.role === 'tool').map((m) => [String(m.tool_call_id), m]));
    const fetchBytes = async (id: string) => {
      const answer = await fetch(`${t.url}/api/sessions/${session.id}/attachments/${id}`, { headers: { authorization: 'Bearer tok-a' } });
      return { type: answer.headers.get('content-type'), bytes: Buffer.from(await answer.arrayBuffer()) };
    };
    return { events, stored, audited, modelRead, fetchBytes };
  }

  it('agrees on text, status, images, structured content and attachments everywhere', async () => {
    const { events, stored, audited, modelRead, fetchBytes } = await run();

    // Every channel carries the same text and status for every call.
    for (const { id } of CALLS) {
      const event = events.get(id)!;
      expect(stored.get(id)?.content).toBe(event.data.result);
      expect(modelRead.get(id)?.content).toBe(event.data.result);
      expect(audited.get(id)?.status).toBe(event.data.status === 'error' ? 'ERROR' : 'SUCCESS');
      expect(String(event.data.result)).not.toMatch(/[A-Za-z0-9+/]{200,}={0,2}/); // no base64 as text
    }
    const status = (id: string) => events.get(id)!.data.status;
    expect(CALLS.map(({ id }) => [id, status(id)])).toEqual([
      ['call_text', 'success'],
      ['call_pixel', 'success'],
      ['call_structured', 'success'],
      ['call_fail', 'error'],
      ['call_error_key', 'success'],
      ['call_blob', 'success'],
      ['call_big_text', 'success'],
      ['call_big_image', 'success'],
    ]);
    expect(events.get('call_text')!.data.result).toBe('plain words');
    expect(events.get('call_structured')!.data.result).toBe('two rows');
    expect(events.get('call_fail')!.data.result).toBe('the server said no');
    expect(audited.get('call_fail')?.errorMessage).toBe('the server said no');

    // The image: stored once, served byte for byte, shown to the model as an image.
    const [pixel] = events.get('call_pixel')!.data.attachments as Attachment[];
    expect(pixel).toEqual({ id: expect.stringMatching(/^att_/), mediaType: 'image/png', bytes: PIXEL_PNG.length });
    expect(await fetchBytes(pixel.id)).toEqual({ type: 'image/png', bytes: Buffer.from(PIXEL_PNG) });
    expect(modelRead.get('call_pixel')?.images).toEqual([{ mediaType: 'image/png', data: Buffer.from(PIXEL_PNG).toString('base64') }]);
    expect(stored.get('call_pixel')?.attachments).toEqual([pixel]);
    expect(audited.get('call_pixel')?.attachments).toEqual([pixel]);

    // A 3 MB image within the per-call image budget.
    const [bigImage] = events.get('call_big_image')!.data.attachments as Attachment[];
    expect((await fetchBytes(bigImage.id)).bytes.equals(Buffer.from(pngOfSize(3 * 1024 * 1024)))).toBe(true);

    // The blob: an attachment, described in the text.
    const [blob] = events.get('call_blob')!.data.attachments as Attachment[];
    expect((await fetchBytes(blob.id)).bytes.equals(Buffer.from(patternBytes(512)))).toBe(true);
    expect(events.get('call_blob')!.data.result).toBe(`[resource file:///data/blob.bin: application/octet-stream, 512 bytes, attachment ${blob.id}]`);

    // 3 MB of text: the model reads a budgeted head and tail; the whole text is an attachment.
    const bigText = String(events.get('call_big_text')!.data.result);
    expect(bigText.length).toBeLessThan(51_000);
    expect(bigText).toContain(`of ${3 * 1024 * 1024} characters omitted`);
    const [whole] = events.get('call_big_text')!.data.attachments as Attachment[];
    expect((await fetchBytes(whole.id)).bytes.length).toBe(3 * 1024 * 1024);
  }, 60_000);

  it('refuses an image past the byte budget of a call, and says so to the model', async () => {
    const { events, modelRead } = await run({ HARNESS_TOOL_IMAGE_MAX_BYTES: String(1024 * 1024) });
    expect(events.get('call_big_image')!.data.status).toBe('success');
    expect(events.get('call_big_image')!.data.attachments).toBeUndefined();
    expect(String(events.get('call_big_image')!.data.result)).toContain('not shown, over the 1048576 byte image budget of a call');
    expect(modelRead.get('call_big_image')?.images).toBeUndefined();
    expect(modelRead.get('call_pixel')?.images).toHaveLength(1);
  }, 60_000);
});
