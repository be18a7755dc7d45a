import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { ConfigError } from './config/config-error';
import { AGENT_NAME } from './harness/runtime/gen-ai-tracing';

/**
 * Sending the server's spans to an OpenTelemetry collector over OTLP (HTTP, JSON) when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; nothing at all
 * when neither is: the spans stay the API's no-ops (docs/observability.md). The exporter reads
 * the other standard variables itself (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`, …), the resource
 * `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`; `OTEL_SDK_DISABLED=true` or
 * `OTEL_TRACES_EXPORTER=none` turn the export off.
 */

/** The variables that name where traces go, most specific first. */
const ENDPOINT_VARIABLES = ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'] as const;

/** Where traces are sent, or `null` when they are not; a value that is not an http(s) URL is a `ConfigError`. */
export function traceExportEndpoint(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return null;
  for (const variable of ENDPOINT_VARIABLES) {
    const value = env[variable]?.trim();
    if (!value) continue;
    const protocol = URL.canParse(value) ? new URL(value).protocol : null;
    if (protocol !== 'http:' && protocol !== 'https:') throw new ConfigError(variable, `expected an http:// or https:// URL, got '${value}'`);
    return value;
  }
  return null;
}

/** A running export: `shutdown` sends what is still buffered and stops. */
export interface TraceExport {
  endpoint: string;
  shutdown(): Promise<void>;
}

/**
 * Registers a tracer provider that batches every ended span to the OTLP endpoint, and a context
 * manager, so that spans of instrumented libraries nest under the model call that made them.
 * Returns `null`, registering nothing, when no endpoint is set. Reads `process.env`, as the
 * exporter does.
 */
export function startTraceExport(): TraceExport | null {
  const endpoint = traceExportEndpoint();
  if (endpoint === null) return null;
  // Harness's name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES says otherwise.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': AGENT_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({ resource, spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  return {
    endpoint,
    async shutdown() {
      // A collector that is down makes the exporter retry with backoff for up to its timeout
      // (10 s): the stop waits for the last spans a little, not for that.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the collector did not take them within ${SHUTDOWN_FLUSH_MS} ms`)), SHUTDOWN_FLUSH_MS);
        timer.unref();
      });
      try {
        await Promise.race([provider.shutdown(), late]);
      } finally {
        clearTimeout(timer);
        trace.disable();
        context.disable();
      }
    },
  };
}

/** How long a stop waits for the spans still buffered to reach the collector. */
const SHUTDOWN_FLUSH_MS = 2_000;
