import { memo } from 'preact/compat';
import type { RunItem, RunView as Run } from '../state/conversation';
import { QuestionsCard } from './questions-card';
import { ToolCard } from './tool-card';

/**
 * One run: the user's message, then what the agent streamed — text, reasoning, tool cards,
 * questions — in the order it happened, and how the run ended. The newest run is a live region,
 * so that screen readers read the text as it streams.
 */
export const RunView = memo(function RunView({ run, live, cancelRequested }: { run: Run; live: boolean; cancelRequested: boolean }) {
  return (
    <li class={`run run-${run.state}`} data-execution-id={run.executionId}>
      {run.prompt !== null && (
        <div class="message user-message">
          <p class="speaker">You</p>
          <p class="text">{run.prompt}</p>
        </div>
      )}
      <div class="run-items" aria-live={live ? 'polite' : undefined}>
        {run.items.map((item) => (
          <Item key={item.key} item={item} />
        ))}
      </div>
      <RunEnd run={run} cancelled={run.cancelled || (live && cancelRequested)} />
    </li>
  );
});

function Item({ item }: { item: RunItem }) {
  switch (item.kind) {
    case 'text':
      return (
        <div class="message assistant-message">
          <p class="text">{item.text}</p>
        </div>
      );
    case 'thinking':
      return (
        <details class="thinking" open={!item.done}>
          <summary>{item.done ? 'Reasoning' : 'Reasoning…'}</summary>
          <p class="text">{item.text}</p>
        </details>
      );
    case 'tool':
      return <ToolCard call={item.call} />;
    case 'questions':
      return <QuestionsCard questions={item.questions} />;
    case 'notice':
      return (
        <p class="notice" role="note">
          {item.message}
        </p>
      );
  }
}

function RunEnd({ run, cancelled }: { run: Run; cancelled: boolean }) {
  switch (run.state) {
    case 'running':
      return <p class="run-end working">Working…</p>;
    case 'finished':
      return (
        <p class="run-end">
          {cancelled ? 'Cancelled' : 'Finished'}
          {run.usage && run.usage.totalTokens > 0 && <span class="muted"> · {run.usage.totalTokens} tokens</span>}
        </p>
      );
    case 'failed':
    case 'interrupted':
      return <p class="run-end failed">{run.error}</p>;
  }
}
