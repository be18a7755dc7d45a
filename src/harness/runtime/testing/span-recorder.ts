import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';

/**
 * The OpenTelemetry SDK recording every span Harness ends into its in-memory exporter, for tests
 * of what Harness traces. `install()` makes its provider the global one, `uninstall()` restores
 * the no-op API. One per test file: the API's tracers keep the first provider they delegated to.
 */
export class SpanRecorder {
  readonly exporter = new InMemorySpanExporter();
  readonly provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: this.exporter })] });

  install(): void {
    trace.setGlobalTracerProvider(this.provider);
  }

  uninstall(): void {
    trace.disable();
  }

  /** Forgets the spans ended so far. */
  reset(): void {
    this.exporter.reset();
  }

  /** The ended spans whose name starts with `prefix`, in the order they started. */
  named(prefix: string): ReadableSpan[] {
    return this.exporter
      .getFinishedSpans()
      .filter((span) => span.name.startsWith(prefix))
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  }
}

/** The span id of a span's parent, if it has one. */
export function parentIdOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}
