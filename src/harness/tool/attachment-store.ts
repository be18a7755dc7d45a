/** A stored binary part of a tool result, as events, messages and activities list it. */
export interface ToolAttachment {
  id: string;
  mediaType: string;
  /** Size in bytes. */
  bytes: number;
  name?: string;
}

/** What is stored for one attachment. */
export interface NewAttachment {
  sessionId: number;
  executionId: string | null;
  toolCallId: string;
  mediaType: string;
  data: Uint8Array;
  name?: string;
}

/**
 * Where binary parts of tool results (images, blobs, the full text of a budgeted result) are
 * kept once, addressed by id, instead of as base64 inside messages. The session layer implements
 * it on the database; the dispatcher and the loop depend only on this port.
 */
export interface AttachmentStore {
  save(attachment: NewAttachment): ToolAttachment;
  /** The attachment's bytes if it belongs to the session; null otherwise. */
  read(sessionId: number, id: string): { mediaType: string; data: Uint8Array; name?: string } | null;
}
