import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { FakeOpenAiProvider } from './support/fake-openai-provider';
import { HttpClient } from './support/http-client';
import { fileServerEnv, killIfRunning, spawnServer, waitUntilListening, type ServerProcess } from './support/server-process';
import { withTimeout, WsTestClient } from './support/ws-test-client';

const TOKEN = 'trace-token';

/** One span as OTLP/JSON carries it (only what the test reads). */
interface OtlpSpan {
  name: string;
  spanId: string;
  parentSpanId?: string;
  status?: { code?: number; message?: string };
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number; doubleValue?: number } }>;
}

/** A stand-in for an OpenTelemetry collector: it keeps what is POSTed to `/v1/traces`. */
class Collector {
  readonly spans: OtlpSpan[] = [];
  readonly services: string[] = [];
  readonly contentTypes: string[] = [];

  private constructor(private readonly server: http.Server) {}

  static async start(): Promise<Collector> {
    const server = http.createServer();
    const collector = new Collector(server);
    server.on('request', (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/v1/traces') collector.receive(req.headers['content-type'] ?? '', Buffer.concat(chunks).toString());
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return collector;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  named(prefix: string): OtlpSpan[] {
    return this.spans.filter((span) => span.name.startsWith(prefix));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private receive(contentType: string, body: string): void {
    this.contentTypes.push(contentType);
    const request = JSON.parse(body) as {
      resourceSpans: Array<{ resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
    };
    for (const resourceSpans of request.resourceSpans) {
      const service = resourceSpans.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value.stringValue;
      if (service) this.services.push(service);
      for (const scope of resourceSpans.scopeSpans) this.spans.push(...scope.spans);
    }
  }
}

/** An attribute's value, whatever its OTLP type. */
function attribute(span: OtlpSpan | undefined, key: string): string | number | undefined {
  const value = span?.attributes.find((entry) => entry.key === key)?.value;
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.doubleValue;
}

/**
 * The real server process exporting its spans over OTLP to a collector when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (docs/running.md), and sending the last of them when it stops.
 */
describe('exporting traces over OTLP', () => {
  let scratch: string;
  let provider: FakeOpenAiProvider;
  let collector: Collector;
  let server: ServerProcess | null = null;
  let watcher: WsTestClient | null = null;

  beforeEach(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-otlp-'));
    provider = await FakeOpenAiProvider.start();
    collector = await Collector.start();
  });

  afterEach(async () => {
    await watcher?.close();
    watcher = null;
    await killIfRunning(server);
    server = null;
    await provider.close();
    await collector.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  it("sends a run's spans to the collector, the last ones when the server stops", async () => {
    // The batch processor's default delay (5 s) holds every span of the run: they can only reach
    // the collector through the flush at the stop.
    server = spawnServer({ ...fileServerEnv(scratch, TOKEN, provider.url), OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
    const url = await waitUntilListening(server);
    expect(server.stdout()).toContain(`harness sending traces to ${collector.url}`);
    const api = new HttpClient(url, TOKEN);
    watcher = await WsTestClient.connect(url, TOKEN);
    const session = (await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' })).body as { id: number };
    provider.script(
      {
        toolCalls: [
          { id: 'call_list', name: 'task_list', arguments: {} },
          { id: 'call_missing', name: 'read_file', arguments: { path: 'missing.txt' } },
        ],
      },
      { content: 'Nothing to do.' },
    );
    const executionId = (await api.post(`/api/sessions/${session.id}/messages`, { content: 'what is left?' })).body.executionId as string;
    await watcher.waitForRunEvent('message_end', executionId);

    server.child.kill('SIGTERM');
    expect(await withTimeout(server.exited, 15_000, 'the server did not exit')).toEqual({ code: 0, signal: null });

    expect(collector.contentTypes[0]).toBe('application/json');
    expect(new Set(collector.services)).toEqual(new Set(['harness']));
    const [run] = collector.named('invoke_agent');
    expect(run.name).toBe('invoke_agent harness');
    expect(attribute(run, 'harness.execution_id')).toBe(executionId);
    expect(attribute(run, 'harness.run.status')).toBe('completed');
    expect(attribute(run, 'gen_ai.conversation.id')).toBe(String(session.id));
    expect(collector.named('chat ').map((span) => [span.name, span.parentSpanId])).toEqual([
      ['chat fake-model', run.spanId],
      ['chat fake-model', run.spanId],
    ]);
    const tools = collector.named('execute_tool');
    expect(tools.map((span) => [span.name, span.parentSpanId, attribute(span, 'gen_ai.tool.call.id'), attribute(span, 'harness.tool.status')]).sort()).toEqual(
      [
        ['execute_tool read_file', run.spanId, 'call_missing', 'error'],
        ['execute_tool task_list', run.spanId, 'call_list', 'success'],
      ].sort(),
    );
    const failed = tools.find((span) => span.name === 'execute_tool read_file');
    expect(attribute(failed, 'error.type')).toBe('tool_error');
    // OTLP's STATUS_CODE_ERROR.
    expect(failed?.status?.code).toBe(2);
  });

  it('goes on running and stops cleanly when the collector is down', async () => {
    const gone = collector.url;
    await collector.close();
    server = spawnServer({ ...fileServerEnv(scratch, TOKEN, provider.url), OTEL_EXPORTER_OTLP_ENDPOINT: gone, OTEL_BSP_SCHEDULE_DELAY: '50' });
    const url = await waitUntilListening(server);
    const api = new HttpClient(url, TOKEN);
    watcher = await WsTestClient.connect(url, TOKEN);
    const session = (await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' })).body as { id: number };
    for (const content of ['first', 'second']) {
      provider.script({ toolCalls: [{ id: `call_${content}`, name: 'task_list', arguments: {} }] }, { content: 'Done.' });
      const executionId = (await api.post(`/api/sessions/${session.id}/messages`, { content })).body.executionId as string;
      const end = await watcher.waitForRunEvent('message_end', executionId);
      expect(end.data.executionId).toBe(executionId);
      // Past the batch delay: the export of the first run's spans has failed before the second starts.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    server.child.kill('SIGTERM');
    // The stop waits a moment for the last spans, not for the exporter's retries (10 s).
    expect(await withTimeout(server.exited, 8_000, 'the server did not exit')).toEqual({ code: 0, signal: null });
    expect(server.stderr()).toBe('sending the last traces failed: the collector did not take them within 2000 ms\n');
    collector = await Collector.start();
  });

  it('sends nothing when the SDK is disabled, an endpoint set or not', async () => {
    server = spawnServer({ ...fileServerEnv(scratch, TOKEN, provider.url), OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SDK_DISABLED: 'true' });
    const url = await waitUntilListening(server);
    expect(server.stdout()).not.toContain('sending traces');
    const api = new HttpClient(url, TOKEN);
    watcher = await WsTestClient.connect(url, TOKEN);
    const session = (await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' })).body as { id: number };
    provider.script({ content: 'Hello.' });
    const executionId = (await api.post(`/api/sessions/${session.id}/messages`, { content: 'hi' })).body.executionId as string;
    await watcher.waitForRunEvent('message_end', executionId);
    server.child.kill('SIGTERM');
    expect(await withTimeout(server.exited, 15_000, 'the server did not exit')).toEqual({ code: 0, signal: null });
    expect(collector.spans).toEqual([]);
  });

  it('refuses an endpoint that is not an http(s) URL, in one line', async () => {
    server = spawnServer({ ...fileServerEnv(scratch, TOKEN, provider.url), OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' });
    expect(await withTimeout(server.exited, 10_000, 'the server did not exit')).toEqual({ code: 1, signal: null });
    expect(server.stderr().trim()).toBe("harness: OTEL_EXPORTER_OTLP_ENDPOINT: expected an http:// or https:// URL, got 'collector:4318'");
  });
});
