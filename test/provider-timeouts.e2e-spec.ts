import { RunService } from '../src/session/run/run.service';
import type { WireFormat } from './support/fake-provider';
import { createSession, startRun, startTestHarness, type TestHarness } from './support/test-harness';

/** What the checks below need of either fake provider. */
interface ScriptableProvider {
  script(...rounds: Array<{ content: string }>): void;
}
import type { WsEvent, WsTestClient } from './support/ws-test-client';

/** Short limits, so that a stuck provider is given up on quickly. */
const HEADERS_TIMEOUT_MS = 300;
const IDLE_TIMEOUT_MS = 300;
const MAX_ANSWER_CHARS = 2_000;
const LIMITS = {
  LLM_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  LLM_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
  LLM_MAX_ANSWER_CHARS: String(MAX_ANSWER_CHARS),
};

/** The server's retry policy: three attempts, with backoffs of at most 500 ms and 1 s between them. */
const ATTEMPTS = 3;
const MAX_BACKOFF_MS = 500 + 1_000;
/** Room for the server's own work (database, WebSocket) on a busy machine. */
const SLACK_MS = 1_500;

describe('a model provider that hangs or never stops', () => {
  describe('over Chat Completions', () => {
    let t: TestHarness;

    beforeEach(async () => {
      t = await startTestHarness({ env: LIMITS });
    });

    afterEach(async () => {
      await t.close();
    });

    it('never sending headers: each attempt is aborted after LLM_HEADERS_TIMEOUT_MS, then the run ends with an error', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      const client = await t.connect();
      t.provider.script(...Array.from({ length: ATTEMPTS }, () => ({ fault: 'no-headers' as const })));

      const started = Date.now();
      const executionId = await startRun(t.userA, session.id, 'hello?');
      const error = await client.waitForRunEvent('error', executionId, {
        timeoutMs: ATTEMPTS * HEADERS_TIMEOUT_MS + MAX_BACKOFF_MS + SLACK_MS,
      });

      expect(error.data.message).toBe(
        `openai: the model sent no response headers within ${HEADERS_TIMEOUT_MS} ms (LLM_HEADERS_TIMEOUT_MS)`,
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(ATTEMPTS * HEADERS_TIMEOUT_MS);
      expect(t.provider.requests).toHaveLength(ATTEMPTS);
      // Every attempt's request was aborted by the server: none is left open.
      await Promise.all(t.provider.requests.map((request) => request.closed));
      await expectSessionFree(t, client, session.id);
    });

    it('going silent mid-answer: the run ends with an error LLM_IDLE_TIMEOUT_MS after the last byte, without a retry', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      const client = await t.connect();
      t.provider.script({ content: 'Let me think', fault: 'stall' });

      const executionId = await startRun(t.userA, session.id, 'hello?');
      await client.waitForRunEvent('content_delta', executionId);
      const silentSince = Date.now();
      const error = await client.waitForRunEvent('error', executionId, { timeoutMs: IDLE_TIMEOUT_MS + SLACK_MS });

      expect(error.data.message).toBe(`openai: the model stream was idle for ${IDLE_TIMEOUT_MS} ms (LLM_IDLE_TIMEOUT_MS)`);
      // The timer started when the last chunk was read, a moment before its event arrived here.
      expect(Date.now() - silentSince).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 100);
      expect(streamedText(client, executionId)).toBe('Let me think');
      expect(t.provider.requests).toHaveLength(1);
      await t.provider.requests[0].closed;
      await expectSessionFree(t, client, session.id);
    });

    it('streaming forever: the run ends with an error once the answer passes LLM_MAX_ANSWER_CHARS', async () => {
      const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
      const client = await t.connect();
      t.provider.script({ content: 'and on and on ', fault: 'endless' });

      const executionId = await startRun(t.userA, session.id, 'tell me everything');
      const error = await client.waitForRunEvent('error', executionId, { timeoutMs: 5_000 });

      expect(error.data.message).toBe(`openai: the answer exceeded LLM_MAX_ANSWER_CHARS = ${MAX_ANSWER_CHARS} characters`);
      const streamed = streamedText(client, executionId);
      expect(streamed.length).toBeLessThanOrEqual(MAX_ANSWER_CHARS);
      // Pieces of 7 characters: all that fitted reached the client.
      expect(streamed.length).toBeGreaterThan(MAX_ANSWER_CHARS - 7);
      expect(t.provider.requests).toHaveLength(1);
      await t.provider.requests[0].closed;
      await expectSessionFree(t, client, session.id);
    });
  });

  describe.each<WireFormat>(['anthropic', 'responses'])('over the %s wire format', (wire) => {
    it('going silent mid-answer ends the run with the idle timeout, and the session is free', async () => {
      const t = await startTestHarness({ provider: wire, env: LIMITS });
      try {
        const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
        const client = await t.connect();
        t.provider.script({ content: 'Let me think', fault: 'stall' });

        const executionId = await startRun(t.userA, session.id, 'hello?');
        const error = await client.waitForRunEvent('error', executionId, { timeoutMs: IDLE_TIMEOUT_MS + SLACK_MS });

        expect(error.data.message).toBe(`${wire}: the model stream was idle for ${IDLE_TIMEOUT_MS} ms (LLM_IDLE_TIMEOUT_MS)`);
        expect(streamedText(client, executionId)).toBe('Let me think');
        expect(t.provider.requests).toHaveLength(1);
        await t.provider.requests[0].closed;
        await expectSessionFree(t, client, session.id);
      } finally {
        await t.close();
      }
    });
  });
});

/** The text of a run's `content_delta` events, joined. */
function streamedText(client: WsTestClient, executionId: string): string {
  return client
    .runEvents(executionId)
    .filter((event: WsEvent) => event.type === 'content_delta')
    .map((event) => String(event.data.delta))
    .join('');
}

/** Once the failed run has wound up, the session takes a new message (202) and answers it. */
async function expectSessionFree(t: TestHarness<ScriptableProvider>, client: WsTestClient, sessionId: number): Promise<void> {
  await t.harness.app.get(RunService).whenIdle(sessionId);
  t.provider.script({ content: 'Back again.' });
  const answer = await t.userA.post<{ executionId: string }>(`/api/sessions/${sessionId}/messages`, { content: 'and now?' });
  expect(answer.status).toBe(202);
  await client.waitForRunEvent('message_end', answer.body.executionId);
}
