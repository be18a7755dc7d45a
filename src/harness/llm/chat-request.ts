/**
 * The internal, OpenAI-shaped chat vocabulary. Every provider adapter translates between this
 * shape and its provider's wire format; nothing above the adapters sees a provider's shape.
 */

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/** A tool call the model made, as OpenAI Chat Completions shapes it. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: {
    name: string;
    /** The arguments as the model wrote them: a JSON string, possibly malformed. */
    arguments: string;
  };
}

/** One message of a conversation. */
export interface ChatMessage {
  role: ChatRole;
  /** Text of the message; `null` for an assistant message that only calls tools. */
  content: string | null;
  /** Tool calls of an assistant message. */
  tool_calls?: ToolCall[];
  /** For `role: 'tool'`: the call this message answers. */
  tool_call_id?: string;
  /** For `role: 'tool'`: the tool's name (some providers want it). */
  name?: string;
  /** For `role: 'tool'`: the result was an error (providers that can say so, e.g. Anthropic). */
  is_error?: boolean;
  /** Reasoning the model streamed before answering, kept for providers that want it back. */
  reasoning_content?: string;
  /**
   * For `role: 'tool'`: images that came with the result, for providers that can show them
   * (Anthropic `tool_result` image blocks, Responses `input_image`, Chat Completions a user
   * message after the round). Base64 in memory only: the store keeps attachment ids.
   */
  images?: ChatImage[];
  /** For `role: 'tool'`: the result's stored attachments (images, blobs, a budgeted result's full text). */
  attachments?: ChatAttachment[];
}

/** An image sent to a model. */
export interface ChatImage {
  mediaType: string;
  /** Base64. */
  data: string;
}

/** A stored attachment a message refers to. */
export interface ChatAttachment {
  id: string;
  mediaType: string;
  bytes: number;
  name?: string;
}

/** A tool offered to the model, as OpenAI `{"type":"function","function":{...}}`. */
export interface ToolDefinition {
  type: 'function';
  function: {
    name: string;
    description: string;
    parameters: Record<string, unknown>;
  };
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  temperature?: number;
  maxTokens?: number;
  /** Identifies the conversation (the scripted model answers per session). */
  sessionId?: number | null;
}

export interface ChatUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** A fragment of a tool call in a stream; fragments with the same `index` belong together. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: {
    name?: string;
    arguments?: string;
  };
}

/** One piece of a streamed answer. Any field may be absent. */
export interface StreamChunk {
  contentDelta?: string;
  thinkingDelta?: string;
  toolCallDeltas?: ToolCallDelta[];
  finishReason?: string;
  usage?: ChatUsage;
}

/**
 * One step of a stream read a network read at a time (`LlmAdapter.streamReads`): a chunk, or the
 * chunks that arrived together, in order.
 */
export type StreamRead = StreamChunk | readonly StreamChunk[];

/** Whether a step of `streamReads` holds several chunks. */
export function isChunkList(read: StreamRead): read is readonly StreamChunk[] {
  return Array.isArray(read);
}

/** A whole (non-streamed) answer. */
export interface ChatResponse {
  message: ChatMessage;
  finishReason: string | null;
  usage: ChatUsage | null;
}

/** Which provider and model a session talks to. */
export interface LlmModelConfig {
  /** `openai` | `anthropic` | `responses` | `scripted`; anything else is treated as `openai`. */
  protocol: string;
  baseUrl: string | null;
  apiKey: string | null;
  model: string;
  maxTokens?: number;
  temperature?: number;
  /**
   * Longest wait, in ms, from sending a request to the provider's response headers
   * (`LLM_HEADERS_TIMEOUT_MS`); each attempt gets its own. Defaults to 60 s.
   */
  headersTimeoutMs?: number;
  /** Longest silence, in ms, between two reads of a response body (`LLM_IDLE_TIMEOUT_MS`). Defaults to 120 s. */
  idleTimeoutMs?: number;
  /**
   * Most characters one streamed answer may carry — text, reasoning, tool names and arguments
   * together (`LLM_MAX_ANSWER_CHARS`). Defaults to 1 000 000.
   */
  maxAnswerChars?: number;
}
