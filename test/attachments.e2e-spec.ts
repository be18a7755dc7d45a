import { ATTACHMENT_STORE } from '../src/harness/harness.module';
import type { AttachmentStore, ToolAttachment } from '../src/harness/tool/attachment-store';
import { ActivityRepository } from '../src/session/persistence/activity-repository';
import { MessageRepository } from '../src/session/persistence/message-repository';
import { createSession, startTestHarness, TOKEN_A, TOKEN_B, type SessionView, type TestHarness } from './support/test-harness';

/** Bytes that no text decoding survives: a PNG signature, NUL, 0xFF, a broken UTF-8 sequence. */
const IMAGE_BYTES = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0xc3, 0x28, 0x80]);

/**
 * Attachments of tool results, stored through the running server's `ATTACHMENT_STORE` and read
 * back over real HTTP, with the same authentication and ownership rules as every session route.
 */
describe('GET /api/sessions/:id/attachments/:attachmentId', () => {
  let t: TestHarness;
  let store: AttachmentStore;
  let session: SessionView;

  beforeEach(async () => {
    t = await startTestHarness();
    store = t.harness.app.get<AttachmentStore>(ATTACHMENT_STORE);
    session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
  });

  afterEach(async () => {
    await t.close();
  });

  const fetchAttachment = (sessionId: number, attachmentId: string, token: string | null = TOKEN_A) =>
    fetch(`${t.url}/api/sessions/${sessionId}/attachments/${encodeURIComponent(attachmentId)}`, {
      headers: token === null ? {} : { authorization: `Bearer ${token}` },
    });

  const saveImage = (sessionId: number, name?: string): ToolAttachment =>
    store.save({ sessionId, executionId: 'exec-1', toolCallId: 'call_1', mediaType: 'image/png', data: IMAGE_BYTES, ...(name === undefined ? {} : { name }) });

  describe('when the owner asks', () => {
    it('answers the stored bytes exactly, with their type, length and safety headers', async () => {
      const attachment = saveImage(session.id, 'screen shot "1".png');
      const answer = await fetchAttachment(session.id, attachment.id);
      expect(answer.status).toBe(200);
      expect(Buffer.from(await answer.arrayBuffer()).equals(Buffer.from(IMAGE_BYTES))).toBe(true);
      expect(answer.headers.get('content-type')).toBe('image/png');
      expect(answer.headers.get('content-length')).toBe(String(IMAGE_BYTES.byteLength));
      expect(answer.headers.get('content-disposition')).toBe(`inline; filename="screen shot _1_.png"; filename*=UTF-8''screen%20shot%20%221%22.png`);
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    });

    it('sends no content-disposition for an attachment without a name', async () => {
      const attachment = store.save({ sessionId: session.id, executionId: null, toolCallId: 'c', mediaType: 'text/plain; charset=utf-8', data: new TextEncoder().encode('full text ✓') });
      const answer = await fetchAttachment(session.id, attachment.id);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toBe('full text ✓');
      expect(answer.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(answer.headers.has('content-disposition')).toBe(false);
    });
  });

  it('answers 401 without a token or with an unknown one', async () => {
    const attachment = saveImage(session.id);
    for (const token of [null, 'tok-unknown']) {
      const answer = await fetchAttachment(session.id, attachment.id, token);
      expect(answer.status).toBe(401);
      expect(await answer.json()).toEqual(expect.objectContaining({ message: expect.any(String) }));
    }
  });

  it('answers 404 to another user, as for a session that does not exist', async () => {
    const attachment = saveImage(session.id);
    const answer = await fetchAttachment(session.id, attachment.id, TOKEN_B);
    expect(answer.status).toBe(404);
    const body = await answer.text();
    expect(body).not.toContain(Buffer.from(IMAGE_BYTES).toString('latin1'));
    expect(JSON.parse(body)).toEqual(expect.objectContaining({ message: expect.any(String) }));
  });

  it('answers 404 for an attachment of another session, even of the same user', async () => {
    const other = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const attachment = saveImage(other.id);
    expect((await fetchAttachment(session.id, attachment.id)).status).toBe(404);
    expect((await fetchAttachment(other.id, attachment.id)).status).toBe(200);
  });

  it('answers 404 for an unknown attachment or session id', async () => {
    const attachment = saveImage(session.id);
    expect((await fetchAttachment(session.id, 'att_AAAAAAAAAAAAAAAAAAAAAA')).status).toBe(404);
    expect((await fetchAttachment(session.id, `${attachment.id}x`)).status).toBe(404);
    expect((await fetchAttachment(9999, attachment.id)).status).toBe(404);
    expect((await t.userA.get(`/api/sessions/abc/attachments/${attachment.id}`)).status).toBe(404);
  });

  it('lists the references on the tool message and the activity, never the bytes', async () => {
    const attachment = saveImage(session.id, 'shot.png');
    const messages = t.harness.app.get(MessageRepository);
    messages.appendMany(session.id, 'exec-1', [
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'screenshot', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'Took a screenshot', attachments: [attachment] },
    ]);
    t.harness.app.get(ActivityRepository).record({
      sessionId: session.id,
      executionId: 'exec-1',
      toolCallId: 'call_1',
      toolName: 'screenshot',
      type: 'tool',
      target: '',
      summary: 'Took a screenshot',
      status: 'SUCCESS',
      metadata: { durationMs: 5, attachments: [attachment] },
    });

    const listed = await t.userA.get(`/api/sessions/${session.id}/messages`);
    expect(listed.status).toBe(200);
    expect(listed.body[0]).not.toHaveProperty('attachments');
    expect(listed.body[1]).toEqual({
      id: expect.any(Number),
      role: 'tool',
      executionId: 'exec-1',
      content: 'Took a screenshot',
      toolCallId: 'call_1',
      attachments: [{ id: attachment.id, mediaType: 'image/png', bytes: IMAGE_BYTES.byteLength, name: 'shot.png' }],
      createdAt: expect.any(String),
    });
    expect(listed.text).not.toContain(Buffer.from(IMAGE_BYTES).toString('base64'));

    const activities = await t.userA.get(`/api/sessions/${session.id}/activities`);
    expect(activities.status).toBe(200);
    expect(activities.body).toEqual([expect.objectContaining({ toolCallId: 'call_1', durationMs: 5, attachments: [attachment] })]);

    // And what the stored reference names is served.
    const served = await fetchAttachment(session.id, listed.body[1].attachments[0].id);
    expect(Buffer.from(await served.arrayBuffer()).equals(Buffer.from(IMAGE_BYTES))).toBe(true);
  });
});
