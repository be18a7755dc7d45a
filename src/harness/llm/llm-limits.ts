/**
 * What the limits of a model config default to. Headers: providers answer a streaming request
 * once they have accepted it, before generating, so a minute is ample even with queueing. Idle:
 * reasoning models may think for a long while without sending a byte (Chat Completions streams
 * nothing while an o-series model reasons), so silence is allowed for longer. Both stay below the
 * 300 s headers and body timeouts of Node's own fetch, so ours fire first, with a clear message.
 * Answer: a million characters is several times the longest output any current model produces.
 */
export const DEFAULT_LLM_LIMITS = {
  headersTimeoutMs: 60_000,
  idleTimeoutMs: 120_000,
  maxAnswerChars: 1_000_000,
} as const;
