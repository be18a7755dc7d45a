import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { ToolAttachment } from '../../../harness/tool/attachment-store';

/** A stored binary part of a tool result; `GET /api/sessions/:id/attachments/:attachmentId` serves it. */
export class AttachmentView implements ToolAttachment {
  @ApiProperty()
  id!: string;

  @ApiProperty({ example: 'image/png' })
  mediaType!: string;

  @ApiProperty({ type: 'integer', description: 'Size in bytes.' })
  bytes!: number;

  @ApiPropertyOptional()
  name?: string;
}

/** A stored message of a session's conversation (`GET /api/sessions/:id/messages`). */
export class MessageView {
  @ApiProperty({ type: 'integer' })
  id!: number;

  @ApiProperty({ enum: ['system', 'user', 'assistant', 'tool'] })
  role!: string;

  @ApiPropertyOptional({ description: "The run that wrote the message (its events carry it as `data.executionId`); absent for messages written outside a run." })
  executionId?: string;

  @ApiProperty({ type: String, nullable: true, description: 'For tool messages exactly the content the model saw.' })
  content!: string | null;

  @ApiPropertyOptional({ type: 'array', items: { type: 'object' }, description: "An assistant message's tool calls." })
  toolCalls?: unknown;

  @ApiPropertyOptional({ description: 'For tool messages: the call this message answers.' })
  toolCallId?: string;

  @ApiPropertyOptional({ type: [AttachmentView], description: "Tool messages whose result had binary parts." })
  attachments?: ToolAttachment[];

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;
}

/** A tool call as the activity feed shows it (`GET /api/sessions/:id/activities`). */
export class ActivityView {
  @ApiProperty({ type: 'integer' })
  id!: number;

  @ApiProperty()
  toolCallId!: string;

  @ApiProperty()
  toolName!: string;

  @ApiProperty()
  type!: string;

  @ApiProperty()
  target!: string;

  @ApiProperty()
  summary!: string;

  @ApiProperty({ enum: ['SUCCESS', 'ERROR'] })
  status!: 'SUCCESS' | 'ERROR';

  @ApiPropertyOptional({ type: 'integer' })
  durationMs?: number;

  @ApiPropertyOptional()
  errorMessage?: string;

  @ApiPropertyOptional({ type: [AttachmentView], description: "The call's stored attachments, as its tool message lists them." })
  attachments?: ToolAttachment[];

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;
}
