import type { ChatRequest, ChatResponse, LlmModelConfig, StreamChunk, StreamRead } from './chat-request';
import { readsOf, type LlmAdapter } from './llm-adapter';

/** The protocols `LLM_PROTOCOL` can name. */
export type LlmProtocol = 'openai' | 'anthropic' | 'responses' | 'scripted';

/** One adapter per protocol. */
export type LlmAdapters = Record<LlmProtocol, LlmAdapter>;

/**
 * The one `LlmAdapter` the rest of Harness talks to: it routes every call by
 * `config.protocol` (case-insensitive), so a session's model config alone decides the provider.
 * An unknown protocol goes to `openai`, the dialect most servers speak.
 */
export class LlmAdapterFacade implements LlmAdapter {
  constructor(private readonly adapters: LlmAdapters) {}

  chat(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): Promise<ChatResponse> {
    return this.adapterFor(config.protocol).chat(request, config, signal);
  }

  stream(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamChunk> {
    return this.adapterFor(config.protocol).stream(request, config, signal);
  }

  /** The protocol's adapter's `streamReads`, or its `stream` (a chunk a step) when it has none. */
  streamReads(request: ChatRequest, config: LlmModelConfig, signal?: AbortSignal): AsyncIterable<StreamRead> {
    return readsOf(this.adapterFor(config.protocol), request, config, signal);
  }

  /** The adapter that serves a protocol name. */
  adapterFor(protocol: string): LlmAdapter {
    return this.adapters[normalizeProtocol(protocol)];
  }
}

/** A protocol name as one of the known protocols; anything unknown is `openai`. */
export function normalizeProtocol(protocol: string | null | undefined): LlmProtocol {
  const name = (protocol ?? '').trim().toLowerCase();
  return name === 'anthropic' || name === 'responses' || name === 'scripted' ? name : 'openai';
}

/** The model a protocol uses when `LLM_MODEL` is unset: a small, cheap model of that provider. */
export const DEFAULT_MODELS: Readonly<Record<LlmProtocol, string>> = {
  openai: 'gpt-4o-mini',
  responses: 'gpt-4o-mini',
  anthropic: 'claude-haiku-4-5',
  scripted: 'scripted',
};

/**
 * The model config interface.md's `LLM_*` variables describe: protocol `scripted` when
 * `LLM_BASE_URL` is unset, else `openai`; `LLM_PROTOCOL` overrides, and an unknown name is
 * `openai`. Without `LLM_MODEL` the protocol's {@link DEFAULT_MODELS} entry is used: the model
 * must follow the protocol, not the base URL, since `anthropic`, `responses` and `openai` reach
 * their public endpoints without one. Empty values count as unset. `loadHarnessConfig` builds the
 * server's config with this function, so the two cannot disagree; it also reads the limits
 * (`LLM_HEADERS_TIMEOUT_MS`, `LLM_IDLE_TIMEOUT_MS`, `LLM_MAX_ANSWER_CHARS`), which can be invalid
 * and then stop the server with a `ConfigError`. Without them the adapters use `DEFAULT_LLM_LIMITS`.
 */
export function createLlmModelConfigFromEnv(env: NodeJS.ProcessEnv): LlmModelConfig & { protocol: LlmProtocol } {
  const baseUrl = nonEmpty(env.LLM_BASE_URL);
  const named = nonEmpty(env.LLM_PROTOCOL);
  const protocol: LlmProtocol = named ? normalizeProtocol(named) : baseUrl ? 'openai' : 'scripted';
  return {
    protocol,
    baseUrl,
    apiKey: nonEmpty(env.LLM_API_KEY),
    model: nonEmpty(env.LLM_MODEL) ?? DEFAULT_MODELS[protocol],
  };
}

function nonEmpty(value: string | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}
