import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { ExecutionScope } from './execution-scope';

/**
 * OpenTelemetry spans for runs, model calls and tool calls, named and attributed after the GenAI
 * semantic conventions (`gen_ai.*`, development status; docs/observability.md). Only the API is
 * used: without an SDK registered by the host process every span is a no-op that records nothing
 * (`isRecording()` is false), and the callers then skip the work of filling it in.
 */

/** The instrumentation scope of every span. */
export const TRACER_NAME = 'harness';

const tracer = trace.getTracer(TRACER_NAME);

/** Attribute names of the GenAI semantic conventions, and Harness's own. */
export const GenAiAttributes = {
  OPERATION_NAME: 'gen_ai.operation.name',
  PROVIDER_NAME: 'gen_ai.provider.name',
  AGENT_NAME: 'gen_ai.agent.name',
  CONVERSATION_ID: 'gen_ai.conversation.id',
  REQUEST_MODEL: 'gen_ai.request.model',
  REQUEST_MAX_TOKENS: 'gen_ai.request.max_tokens',
  REQUEST_TEMPERATURE: 'gen_ai.request.temperature',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  TOOL_NAME: 'gen_ai.tool.name',
  TOOL_CALL_ID: 'gen_ai.tool.call.id',
  TOOL_TYPE: 'gen_ai.tool.type',
  ERROR_TYPE: 'error.type',
  /** The run's id (`executionId` of interface.md). */
  EXECUTION_ID: 'harness.execution_id',
  /** How the run ended: `completed`, `cancelled`, `interrupted`, `error`, `max_rounds`. */
  RUN_STATUS: 'harness.run.status',
  /** Model calls the run made. */
  RUN_ROUNDS: 'harness.run.rounds',
  /** The tool call's `ToolResult.status`, as decided where the tool ran. */
  TOOL_STATUS: 'harness.tool.status',
  /** The tool call's `ToolResult.durationMs`: the tool's own time, without approval or queueing. */
  TOOL_DURATION_MS: 'harness.tool.duration_ms',
} as const;

/** The values of `gen_ai.operation.name` Harness uses. */
export type GenAiOperation = 'invoke_agent' | 'chat' | 'execute_tool';

/** The `gen_ai.agent.name` of every run. */
export const AGENT_NAME = 'harness';

/** `gen_ai.provider.name` for a model protocol (`LLM_PROTOCOL`). */
export function providerName(protocol: string): string {
  switch (protocol) {
    case 'anthropic':
      return 'anthropic';
    case 'scripted':
      return 'harness.scripted';
    default:
      // Chat Completions and Responses, and every OpenAI-compatible server behind them.
      return 'openai';
  }
}

/** The run span of each run in progress, by execution id: the parent of its model and tool spans. */
const runSpans = new Map<string, Span>();

/**
 * The context a model or tool span starts in: the active one when it carries a span (a host that
 * registered a context manager), else the span of the run the current code belongs to
 * (`ExecutionScope`), so that spans nest under their run even without one.
 */
export function parentContext(): Context {
  const active = context.active();
  if (trace.getSpan(active)) return active;
  const executionId = ExecutionScope.currentExecutionId();
  const run = executionId === undefined ? undefined : runSpans.get(executionId);
  return run ? trace.setSpan(active, run) : active;
}

/** Starts a span of `operation` under `parentContext()`; the caller ends it. */
export function startGenAiSpan(name: string, operation: GenAiOperation, kind: SpanKind, attributes: Attributes): Span {
  return tracer.startSpan(name, { kind, attributes: { [GenAiAttributes.OPERATION_NAME]: operation, ...attributes } }, parentContext());
}

/**
 * Starts the `invoke_agent` span of a run and makes it the parent of what the run does; `end`
 * ends it (once).
 */
export function startRunSpan(executionId: string, attributes: Attributes): { span: Span; end(outcome: RunSpanOutcome): void } {
  const span = startGenAiSpan(`invoke_agent ${AGENT_NAME}`, 'invoke_agent', SpanKind.INTERNAL, {
    [GenAiAttributes.AGENT_NAME]: AGENT_NAME,
    [GenAiAttributes.EXECUTION_ID]: executionId,
    ...attributes,
  });
  if (span.isRecording()) runSpans.set(executionId, span);
  let ended = false;
  return {
    span,
    end(outcome) {
      if (ended) return;
      ended = true;
      runSpans.delete(executionId);
      if (!span.isRecording()) return;
      span.setAttribute(GenAiAttributes.RUN_STATUS, outcome.status);
      if (outcome.rounds !== undefined) span.setAttribute(GenAiAttributes.RUN_ROUNDS, outcome.rounds);
      if (outcome.usage) {
        span.setAttribute(GenAiAttributes.USAGE_INPUT_TOKENS, outcome.usage.inputTokens);
        span.setAttribute(GenAiAttributes.USAGE_OUTPUT_TOKENS, outcome.usage.outputTokens);
      }
      if (outcome.error !== undefined) markFailed(span, outcome.status, outcome.error);
      span.end();
    },
  };
}

/** How a run ended, for its span. */
export interface RunSpanOutcome {
  status: string;
  rounds?: number;
  usage?: { inputTokens: number; outputTokens: number };
  /** Set when the run failed: the span's status becomes ERROR with this message. */
  error?: string;
}

/** Marks a span failed: status ERROR with `message`, and `error.type`. */
export function markFailed(span: Span, errorType: string, message: string): void {
  span.setAttribute(GenAiAttributes.ERROR_TYPE, errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

/** Runs `fn` with `span` as the active span, for spans started inside it by instrumented libraries. */
export function withSpan<T>(span: Span, fn: () => T): T {
  return context.with(trace.setSpan(context.active(), span), fn);
}
