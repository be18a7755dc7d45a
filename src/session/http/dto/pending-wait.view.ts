import { ApiProperty } from '@nestjs/swagger';

/** The event a person was sent for a wait, as it was sent. */
export class WaitEventView {
  @ApiProperty({ enum: ['approval_request', 'ask_user_questions', 'tool_request'] })
  type!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: "The event's data, `executionId` included." })
  data!: Record<string, unknown>;
}

/** A wait for a person that a run holds (`GET /api/sessions/:id/pending`). */
export class PendingWaitView {
  @ApiProperty({ description: 'The id to answer with, as in the event.' })
  requestId!: string;

  @ApiProperty({ enum: ['approval', 'question', 'local_tool'] })
  kind!: string;

  @ApiProperty()
  executionId!: string;

  @ApiProperty()
  toolCallId!: string;

  @ApiProperty()
  toolName!: string;

  @ApiProperty({ description: "The call's arguments, exactly as the model wrote them." })
  arguments!: string;

  @ApiProperty({ type: WaitEventView })
  event!: WaitEventView;

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;

  @ApiProperty({ format: 'date-time', description: 'Past it, the call gets its timeout result.' })
  expiresAt!: string;
}
