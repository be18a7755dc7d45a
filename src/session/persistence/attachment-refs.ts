import type { ToolAttachment } from '../../harness/tool/attachment-store';

/**
 * The well-formed attachment references in `value` (`[{id, mediaType, bytes, name?}]`), with only
 * those four fields. Used for what is written to and read from the `attachments` JSON columns and
 * activity metadata, so a malformed entry (or stray data such as base64 beside a reference) is
 * never stored nor shown; anything that is not an array yields none.
 */
export function toAttachmentRefs(value: unknown): ToolAttachment[] {
  if (!Array.isArray(value)) return [];
  const refs: ToolAttachment[] = [];
  for (const entry of value) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { id, mediaType, bytes, name } = entry as Record<string, unknown>;
    if (typeof id !== 'string' || typeof mediaType !== 'string' || typeof bytes !== 'number' || !Number.isSafeInteger(bytes) || bytes < 0) continue;
    const ref: ToolAttachment = { id, mediaType, bytes };
    if (typeof name === 'string') ref.name = name;
    refs.push(ref);
  }
  return refs;
}

/** The refs of `value` as the JSON a column keeps; `null` when there are none. */
export function serializeAttachmentRefs(value: unknown): string | null {
  const refs = toAttachmentRefs(value);
  return refs.length === 0 ? null : JSON.stringify(refs);
}

/** The refs a JSON column holds; a damaged value yields none rather than failing its row. */
export function parseAttachmentRefs(json: string | null): ToolAttachment[] {
  if (json === null) return [];
  try {
    return toAttachmentRefs(JSON.parse(json));
  } catch {
    return [];
  }
}
