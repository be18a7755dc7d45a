import { Body, Controller, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import type { ToolAttachment } from '../../harness/tool/attachment-store';
import type { ActivityRecord } from '../persistence/activity-repository';
import { toAttachmentRefs } from '../persistence/attachment-refs';
import type { MessageRecord } from '../persistence/message-repository';
import type { SessionRecord } from '../persistence/session-repository';
import { RunService } from '../run/run.service';
import { SessionService } from '../service/session-service';
import { CurrentUser } from './auth.guard';
import { CreateSessionDto } from './dto/create-session.dto';
import { PostMessageDto } from './dto/post-message.dto';
import { UpdateSessionDto } from './dto/update-session.dto';
import { SESSION_ID_PIPE } from './session-id.pipe';

/** `/api/sessions` of interface.md. */
@Controller('api/sessions')
export class SessionsController {
  constructor(
    private readonly sessions: SessionService,
    private readonly runs: RunService,
  ) {}

  @Post()
  create(@CurrentUser() userId: number, @Body() body: CreateSessionDto): SessionRecord {
    return this.sessions.create(userId, body);
  }

  @Get(':id')
  get(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): SessionRecord {
    return this.sessions.getOwned(id, userId);
  }

  @Patch(':id')
  update(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number, @Body() body: UpdateSessionDto): SessionRecord {
    return this.sessions.updatePermissionLevel(id, userId, body.permissionLevel);
  }

  @Post(':id/messages')
  @HttpCode(202)
  postMessage(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number, @Body() body: PostMessageDto): { executionId: string } {
    const session = this.sessions.getOwned(id, userId);
    return this.runs.start(session, body.content);
  }

  @Post(':id/cancel')
  @HttpCode(202)
  cancel(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): { cancelled: boolean } {
    this.sessions.getOwned(id, userId);
    return { cancelled: this.runs.cancel(id) };
  }

  @Get(':id/messages')
  messages(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): MessageView[] {
    return this.sessions.listMessages(id, userId).map(toMessageView);
  }

  @Get(':id/activities')
  activities(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): ActivityView[] {
    return this.sessions.listActivities(id, userId).map(toActivityView);
  }
}

interface MessageView {
  id: number;
  role: string;
  content: string | null;
  toolCalls?: unknown;
  toolCallId?: string;
  /** Tool messages whose result had binary parts: `GET /api/sessions/:id/attachments/:attachmentId` serves each. */
  attachments?: ToolAttachment[];
  createdAt: string;
}

function toMessageView(record: MessageRecord): MessageView {
  const view: MessageView = { id: record.id, role: record.role, content: record.content, createdAt: record.createdAt };
  if (record.toolCalls) view.toolCalls = record.toolCalls;
  if (record.toolCallId) view.toolCallId = record.toolCallId;
  if (record.attachments && record.attachments.length > 0) view.attachments = record.attachments;
  return view;
}

interface ActivityView {
  id: number;
  toolCallId: string;
  toolName: string;
  type: string;
  target: string;
  summary: string;
  status: 'SUCCESS' | 'ERROR';
  durationMs?: number;
  errorMessage?: string;
  /** The call's stored attachments, as its tool message lists them. */
  attachments?: ToolAttachment[];
  createdAt: string;
}

function toActivityView(record: ActivityRecord): ActivityView {
  const view: ActivityView = {
    id: record.id,
    toolCallId: record.toolCallId,
    toolName: record.toolName,
    type: record.type,
    target: record.target,
    summary: record.summary,
    status: record.status,
    createdAt: record.createdAt,
  };
  if (typeof record.metadata.durationMs === 'number') view.durationMs = record.metadata.durationMs;
  if (typeof record.metadata.errorMessage === 'string') view.errorMessage = record.metadata.errorMessage;
  const attachments = toAttachmentRefs(record.metadata.attachments);
  if (attachments.length > 0) view.attachments = attachments;
  return view;
}
