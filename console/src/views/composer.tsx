import { useState } from 'preact/hooks';
import { ApiError } from '../api/harness-api';
import type { SessionFeed } from '../state/session-feed';

/** The message box: Send, or Ctrl+Enter (⌘+Enter). One run at a time, so it waits while one goes. */
export function Composer({ feed, disabled, why }: { feed: SessionFeed; disabled: boolean; why: string }) {
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);

  const send = async () => {
    const content = text.trim();
    if (disabled) {
      setProblem(why);
      return;
    }
    if (content === '' || sending) return;
    setSending(true);
    setProblem(null);
    try {
      await feed.send(content);
      setText('');
    } catch (error) {
      setProblem(error instanceof ApiError && error.status === 409 ? 'A run is already going; wait for it or cancel it.' : `Not sent: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      setSending(false);
    }
  };

  return (
    <form
      class="composer"
      onSubmit={(event) => {
        event.preventDefault();
        void send();
      }}
    >
      <label for="message">Message</label>
      <textarea
        id="message"
        rows={3}
        value={text}
        onInput={(event) => setText(event.currentTarget.value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
            event.preventDefault();
            void send();
          }
        }}
        aria-describedby="message-help"
      />
      <p id="message-help" class="hint">
        Ctrl+Enter sends.
      </p>
      {problem && (
        <p class="problem" role="alert">
          {problem}
        </p>
      )}
      <button type="submit" disabled={disabled || sending || text.trim() === ''}>
        {sending ? 'Sending…' : 'Send'}
      </button>
    </form>
  );
}
