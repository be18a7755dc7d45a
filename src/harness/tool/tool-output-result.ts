import type { AttachmentStore, ToolAttachment } from './attachment-store';
import type { ToolContentPart, ToolOutput } from './tool-output';
import type { ToolResult, ToolResultImage, ToolResultPart } from './tool-result';

/** Limits on what one tool result may hand the model. */
export interface ToolOutputBudget {
  /** Longest text the model reads whole (`HARNESS_TOOL_OUTPUT_MAX_CHARS`). */
  maxChars: number;
  /** Longest text of a failed call (`HARNESS_TOOL_ERROR_MAX_CHARS`): errors should be short. */
  maxErrorChars: number;
  /** Most image bytes one call may show the model (`HARNESS_TOOL_IMAGE_MAX_BYTES`). */
  maxImageBytes: number;
}

export const DEFAULT_TOOL_OUTPUT_BUDGET: ToolOutputBudget = { maxChars: 50_000, maxErrorChars: 10_000, maxImageBytes: 5 * 1024 * 1024 };

/** Where a call's binary parts and full text are kept, and who they belong to. */
export interface ResultStorage {
  store: AttachmentStore | null;
  sessionId: number | null;
  executionId: string | null;
  toolCallId: string;
  toolName: string;
  /** Writes the full text of a budgeted result into the session workspace; returns its relative path. */
  saveFullText?: (text: string) => Promise<string | null>;
}

/**
 * Turns a tool's `ToolOutput` into the result the model, the clients and the audit receive:
 * the text the model reads (`content`), each part kept with its annotations, binary parts
 * stored once as attachments, and images for models that can see them. Status and error
 * message are the output's facts.
 */
export function resultFromOutput(output: ToolOutput, storage: ResultStorage, budget: ToolOutputBudget, durationMs: number): ToolResult {
  const parts: ToolResultPart[] = [];
  const attachments: ToolAttachment[] = [];
  const images: ToolResultImage[] = [];
  const lines: string[] = [];
  let imageBytes = 0;

  const save = (data: Uint8Array, mediaType: string, name?: string): ToolAttachment | undefined => {
    if (storage.store === null || storage.sessionId === null) return undefined;
    const saved = storage.store.save({ sessionId: storage.sessionId, executionId: storage.executionId, toolCallId: storage.toolCallId, mediaType, data, name });
    attachments.push(saved);
    return saved;
  };

  for (const part of output.parts) {
    const forModel = !isForUserOnly(part);
    switch (part.type) {
      case 'text':
        parts.push(part);
        if (forModel) lines.push(part.text);
        break;
      case 'image': {
        const bytes = part.data.byteLength;
        if (imageBytes + bytes > budget.maxImageBytes) {
          const omitted = `over the ${budget.maxImageBytes} byte image budget of a call`;
          parts.push({ type: 'image', mediaType: part.mediaType, omitted, ...annotationsOf(part) });
          if (forModel) lines.push(`[image ${part.mediaType}, ${bytes} bytes: not shown, ${omitted}]`);
          break;
        }
        imageBytes += bytes;
        const attachment = save(part.data, part.mediaType);
        parts.push({ type: 'image', mediaType: part.mediaType, ...(attachment ? { attachment } : {}), ...annotationsOf(part) });
        if (forModel) {
          images.push({ mediaType: part.mediaType, data: Buffer.from(part.data).toString('base64'), ...(attachment ? { attachmentId: attachment.id } : {}) });
          lines.push(`[image ${part.mediaType}, ${bytes} bytes${attachment ? `, attachment ${attachment.id}` : ''}]`);
        }
        break;
      }
      case 'resource': {
        const mediaType = part.mediaType ?? 'application/octet-stream';
        const attachment = part.data ? save(part.data, mediaType, lastSegment(part.uri)) : undefined;
        parts.push({
          type: 'resource',
          uri: part.uri,
          ...(part.mediaType ? { mediaType: part.mediaType } : {}),
          ...(part.text !== undefined ? { text: part.text } : {}),
          ...(attachment ? { attachment } : {}),
          ...annotationsOf(part),
        });
        if (!forModel) break;
        if (part.text !== undefined) lines.push(`[resource ${part.uri}]\n${part.text}`);
        else if (part.data) lines.push(`[resource ${part.uri}: ${mediaType}, ${part.data.byteLength} bytes${attachment ? `, attachment ${attachment.id}` : ''}]`);
        else lines.push(`[resource ${part.uri}]`);
        break;
      }
      case 'resource_link':
        parts.push(part);
        if (forModel) lines.push(`[resource link ${part.uri}${part.name ? ` (${part.name})` : ''}${part.description ? `: ${part.description}` : ''}]`);
        break;
    }
  }
  if (lines.length === 0 && output.structuredContent !== undefined) lines.push(JSON.stringify(output.structuredContent));

  const result: ToolResult = {
    callId: storage.toolCallId,
    status: output.isError ? 'error' : 'success',
    content: lines.join('\n'),
    durationMs,
    parts,
  };
  if (output.isError) result.errorMessage = output.errorMessage ?? firstText(output) ?? 'the tool reported a failure';
  if (output.structuredContent !== undefined) result.structuredContent = output.structuredContent;
  if (attachments.length > 0) result.attachments = attachments;
  if (images.length > 0) result.images = images;
  return result;
}

/** Whether the text the model reads of a result is within its budget (an error's is smaller). */
export function withinBudget(result: ToolResult, budget: ToolOutputBudget): boolean {
  return result.content.length <= limitOf(result, budget);
}

function limitOf(result: ToolResult, budget: ToolOutputBudget): number {
  return result.status === 'error' ? budget.maxErrorChars : budget.maxChars;
}

/**
 * Keeps a result's text within its budget: the model gets the head and the tail, the total size,
 * and where the whole text is (an attachment, and a workspace file `read_file` can page through).
 * A result within the budget comes back unchanged.
 */
export async function budgetResult(result: ToolResult, storage: ResultStorage, budget: ToolOutputBudget): Promise<ToolResult> {
  if (withinBudget(result, budget)) return result;
  const limit = limitOf(result, budget);
  const text = result.content;

  let attachment: ToolAttachment | undefined;
  if (storage.store !== null && storage.sessionId !== null) {
    attachment = storage.store.save({
      sessionId: storage.sessionId,
      executionId: storage.executionId,
      toolCallId: storage.toolCallId,
      mediaType: 'text/plain; charset=utf-8',
      data: Buffer.from(text, 'utf8'),
      name: `${storage.toolName}-${storage.toolCallId}.txt`,
    });
  }
  const file = storage.saveFullText ? await storage.saveFullText(text).catch(() => null) : null;
  const where = [
    file ? `the workspace file ${file} (read it in pieces with read_file's offset and limit)` : null,
    attachment ? `attachment ${attachment.id}` : null,
  ].filter((place): place is string => place !== null);
  const head = text.slice(0, Math.floor(limit * 0.7));
  const tail = text.slice(text.length - Math.floor(limit * 0.2));
  const omitted = text.length - head.length - tail.length;
  const note =
    `\n\n[… ${omitted} of ${text.length} characters omitted: the output is longer than the ${limit} characters a tool result may show` +
    (where.length > 0 ? `; the whole output is in ${where.join(' and ')}` : '') +
    ' …]\n\n';
  const budgeted: ToolResult = { ...result, content: head + note + tail };
  if (attachment) budgeted.attachments = [...(result.attachments ?? []), attachment];
  return budgeted;
}

/** A part whose annotations say it is for the user alone is shown to clients, not read by the model. */
function isForUserOnly(part: ToolContentPart): boolean {
  const audience = part.annotations?.audience;
  return audience !== undefined && audience.length > 0 && !audience.includes('assistant');
}

function annotationsOf(part: ToolContentPart): { annotations?: ToolContentPart['annotations'] } {
  return part.annotations ? { annotations: part.annotations } : {};
}

function firstText(output: ToolOutput): string | undefined {
  for (const part of output.parts) if (part.type === 'text' && part.text !== '') return part.text;
  return undefined;
}

function lastSegment(uri: string): string | undefined {
  const segment = uri.split(/[/\\]/).filter(Boolean).at(-1);
  return segment && segment.length <= 200 ? segment : undefined;
}
