import {
  trace,
  TraceFlags,
  type Attributes,
  type AttributeValue,
  type Context,
  type Span,
  type SpanContext,
  type SpanKind,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

/** A span as the recording tracer kept it. */
export interface RecordedSpan {
  name: string;
  kind: SpanKind | undefined;
  spanId: string;
  /** The span id of the parent, if it had one. */
  parentSpanId: string | undefined;
  attributes: Attributes;
  status: SpanStatus | undefined;
  ended: boolean;
  /** The scope the tracer was asked for. */
  scope: string;
}

/**
 * The smallest tracer provider that records spans, for tests of what Harness traces: the real
 * SDK (`@opentelemetry/sdk-trace-base` 2.x) declares a peer range of the API that excludes the 1.10
 * this project uses. `install()` makes it the global provider; `uninstall()` restores the no-op one.
 */
export class RecordingTracerProvider implements TracerProvider {
  readonly spans: RecordedSpan[] = [];
  private nextId = 1;

  getTracer(scope: string): Tracer {
    const startSpan = (name: string, options: SpanOptions = {}, context?: Context): Span => {
      const parent = context === undefined ? undefined : trace.getSpan(context)?.spanContext();
      const record: RecordedSpan = {
        name,
        kind: options.kind,
        spanId: (this.nextId++).toString(16).padStart(16, '0'),
        parentSpanId: parent?.spanId,
        attributes: { ...options.attributes },
        status: undefined,
        ended: false,
        scope,
      };
      this.spans.push(record);
      return new RecordingSpan(record, parent?.traceId ?? '0123456789abcdef0123456789abcdef');
    };
    return {
      startSpan,
      startActiveSpan: (() => {
        throw new Error('startActiveSpan is not used by Harness');
      }) as Tracer['startActiveSpan'],
    };
  }

  install(): void {
    trace.setGlobalTracerProvider(this);
  }

  uninstall(): void {
    trace.disable();
  }

  /** The recorded spans whose name starts with `prefix`. */
  named(prefix: string): RecordedSpan[] {
    return this.spans.filter((span) => span.name.startsWith(prefix));
  }
}

class RecordingSpan implements Span {
  constructor(
    private readonly record: RecordedSpan,
    private readonly traceId: string,
  ) {}

  spanContext(): SpanContext {
    return { traceId: this.traceId, spanId: this.record.spanId, traceFlags: TraceFlags.SAMPLED };
  }

  setAttribute(key: string, value: AttributeValue): this {
    this.record.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    Object.assign(this.record.attributes, attributes);
    return this;
  }

  addEvent(): this {
    return this;
  }

  addLink(): this {
    return this;
  }

  addLinks(): this {
    return this;
  }

  setStatus(status: SpanStatus): this {
    this.record.status = status;
    return this;
  }

  updateName(name: string): this {
    this.record.name = name;
    return this;
  }

  end(): void {
    this.record.ended = true;
  }

  isRecording(): boolean {
    return !this.record.ended;
  }

  recordException(): void {}
}
