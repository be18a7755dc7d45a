import type { ChatUsage, StreamChunk, ToolCall } from '../chat-request';

/** A streamed answer put back together the way the agent loop merges it (tool calls by index). */
export interface CollectedStream {
  chunks: StreamChunk[];
  content: string;
  thinking: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage: ChatUsage | null;
}

/** Drains a stream and merges its chunks. */
export async function collectStream(stream: AsyncIterable<StreamChunk>): Promise<CollectedStream> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return mergeChunks(chunks);
}

/** Merges chunks: text concatenated, tool-call fragments joined by `index`, last finish reason and usage. */
export function mergeChunks(chunks: StreamChunk[]): CollectedStream {
  let content = '';
  let thinking = '';
  let finishReason: string | null = null;
  let usage: ChatUsage | null = null;
  const calls = new Map<number, ToolCall>();
  for (const chunk of chunks) {
    content += chunk.contentDelta ?? '';
    thinking += chunk.thinkingDelta ?? '';
    for (const delta of chunk.toolCallDeltas ?? []) {
      const call: ToolCall = calls.get(delta.index) ?? { id: '', type: 'function', function: { name: '', arguments: '' } };
      if (delta.id) call.id = delta.id;
      if (delta.function?.name) call.function.name += delta.function.name;
      call.function.arguments += delta.function?.arguments ?? '';
      calls.set(delta.index, call);
    }
    if (chunk.finishReason) finishReason = chunk.finishReason;
    if (chunk.usage) usage = chunk.usage;
  }
  const toolCalls = [...calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  return { chunks, content, thinking, toolCalls, finishReason, usage };
}

/** What a stream yielded before it failed, and the error it failed with (typed loosely for inspection). */
export interface FailedStream {
  chunks: StreamChunk[];
  error: any;
}

/**
 * Drains a stream that must fail; `onChunk` sees each chunk as it arrives (to abort mid-stream,
 * say). Fails the test if the stream ends normally.
 */
export async function collectUntilFailure(
  stream: AsyncIterable<StreamChunk>,
  onChunk: (chunk: StreamChunk) => void = () => undefined,
): Promise<FailedStream> {
  const chunks: StreamChunk[] = [];
  try {
    for await (const chunk of stream) {
      chunks.push(chunk);
      onChunk(chunk);
    }
  } catch (error) {
    return { chunks, error };
  }
  throw new Error(`expected the stream to fail, but it ended after ${chunks.length} chunks`);
}
