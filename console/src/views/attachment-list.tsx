import { useContext, useEffect, useState } from 'preact/hooks';
import type { Attachment } from '../api/wire';
import { formatBytes } from '../format';
import { SessionContext } from './session-context';

/** Image types a browser shows safely in an `<img>` (no SVG: it is a document, not a picture). */
const INLINE_IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif', 'image/bmp']);

/** A result's stored binary parts: images shown inline, anything else offered for download. */
export function AttachmentList({ attachments }: { attachments: Attachment[] }) {
  return (
    <ul class="attachments" aria-label="Attachments">
      {attachments.map((attachment) => (
        <li key={attachment.id}>{INLINE_IMAGE_TYPES.has(attachment.mediaType) ? <InlineImage attachment={attachment} /> : <Download attachment={attachment} />}</li>
      ))}
    </ul>
  );
}

function label(attachment: Attachment): string {
  return `${attachment.name ?? attachment.mediaType} · ${formatBytes(attachment.bytes)}`;
}

function InlineImage({ attachment }: { attachment: Attachment }) {
  const context = useContext(SessionContext);
  const [url, setUrl] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    if (!context) return;
    let objectUrl: string | null = null;
    let live = true;
    context.api.attachment(context.sessionId, attachment.id).then(
      (blob) => {
        if (!live) return;
        objectUrl = URL.createObjectURL(blob);
        setUrl(objectUrl);
      },
      (error: unknown) => live && setProblem(error instanceof Error ? error.message : String(error)),
    );
    return () => {
      live = false;
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [context?.api, context?.sessionId, attachment.id]);
  return (
    <figure class="image-attachment">
      {url ? <img src={url} alt={attachment.name ?? 'Image returned by the tool'} /> : <p class="muted">{problem ? `The image could not be loaded: ${problem}` : 'Loading image…'}</p>}
      <figcaption>{label(attachment)}</figcaption>
    </figure>
  );
}

function Download({ attachment }: { attachment: Attachment }) {
  const context = useContext(SessionContext);
  const [problem, setProblem] = useState<string | null>(null);
  const download = async () => {
    if (!context) return;
    setProblem(null);
    try {
      const blob = await context.api.attachment(context.sessionId, attachment.id);
      const url = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = url;
      link.download = attachment.name ?? `${attachment.id}`;
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (error) {
      setProblem(error instanceof Error ? error.message : String(error));
    }
  };
  return (
    <p class="file-attachment">
      <button type="button" class="secondary" onClick={() => void download()}>
        Download {label(attachment)}
      </button>
      {problem && <span class="problem"> {problem}</span>}
    </p>
  );
}
