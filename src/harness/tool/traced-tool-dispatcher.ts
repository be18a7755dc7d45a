import { SpanKind, type Span } from '@opentelemetry/api';
import { GenAiAttributes, markFailed, startGenAiSpan, withSpan } from '../runtime/gen-ai-tracing';
import type { ToolConcurrency, ToolInvocation, ToolInvocationDispatcher } from './tool-invocation';
import type { ToolResult } from './tool-result';

/**
 * A `ToolInvocationDispatcher` in front of another that records each call as an
 * `execute_tool {tool}` span (GenAI semantic conventions: `gen_ai.tool.name`,
 * `gen_ai.tool.call.id`; the result's status and duration as `harness.tool.status` and
 * `harness.tool.duration_ms`; a result of status `error` sets `error.type` and status ERROR). The span
 * covers the call from its dispatch to its result: approval, a desktop's answer, an MCP server's.
 * Without a tracing SDK the span does not record and the call goes straight through.
 */
export class TracedToolDispatcher implements ToolInvocationDispatcher {
  constructor(private readonly inner: ToolInvocationDispatcher) {}

  /** The inner dispatcher's scheduling, unchanged: tracing must not change how a round runs. */
  concurrencyOf(invocation: ToolInvocation): ToolConcurrency {
    return this.inner.concurrencyOf?.(invocation) ?? 'shared';
  }

  /** The inner dispatcher's promise itself when the span does not record: no step of its own. */
  dispatchInvocation(invocation: ToolInvocation): Promise<ToolResult> {
    const attributes: Record<string, string> = {
      [GenAiAttributes.TOOL_NAME]: invocation.toolName,
      [GenAiAttributes.TOOL_CALL_ID]: invocation.callId,
      [GenAiAttributes.TOOL_TYPE]: 'function',
    };
    if (invocation.sessionId !== null) attributes[GenAiAttributes.CONVERSATION_ID] = String(invocation.sessionId);
    const span = startGenAiSpan(`execute_tool ${invocation.toolName}`, 'execute_tool', SpanKind.INTERNAL, attributes);
    if (!span.isRecording()) return this.inner.dispatchInvocation(invocation);
    return this.traced(span, invocation);
  }

  private async traced(span: Span, invocation: ToolInvocation): Promise<ToolResult> {
    try {
      const result = await withSpan(span, () => this.inner.dispatchInvocation(invocation));
      span.setAttribute(GenAiAttributes.TOOL_STATUS, result.status);
      if (result.durationMs !== undefined && Number.isFinite(result.durationMs)) span.setAttribute(GenAiAttributes.TOOL_DURATION_MS, result.durationMs);
      if (result.status === 'error') markFailed(span, 'tool_error', result.errorMessage ?? 'the tool call failed');
      return result;
    } catch (error) {
      // The contract says the inner dispatcher never rejects; a span still ends if one does.
      markFailed(span, '_OTHER', error instanceof Error ? error.message : String(error));
      throw error;
    } finally {
      span.end();
    }
  }
}
