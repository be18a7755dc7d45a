import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import { toAttachmentRefs } from '../persistence/attachment-refs';
import type { ActivityRecord } from '../persistence/activity-repository';
import type { MessageRecord } from '../persistence/message-repository';
import type { SessionRecord } from '../persistence/session-repository';
import { RunService } from '../run/run.service';
import { SessionDeleter } from '../service/session-deleter';
import { SessionService } from '../service/session-service';
import { CurrentUser } from './auth.guard';
import { CreateSessionDto } from './dto/create-session.dto';
import { ErrorView } from './dto/error.view';
import { ActivityView, MessageView } from './dto/history.view';
import { ListSessionsDto } from './dto/list-sessions.dto';
import { PendingWaitView } from './dto/pending-wait.view';
import { PostMessageDto } from './dto/post-message.dto';
import { RunCancelledView, RunStartedView, SessionPageView, SessionView } from './dto/session.view';
import { UpdateSessionDto } from './dto/update-session.dto';
import { SESSION_ID_PIPE } from './session-id.pipe';

/** `/api/sessions` of interface.md. */
@ApiTags('sessions')
@Controller('api/sessions')
export class SessionsController {
  constructor(
    private readonly sessions: SessionService,
    private readonly runs: RunService,
    private readonly deleter: SessionDeleter,
  ) {}

  @Get()
  @ApiOperation({ summary: "The caller's own sessions, newest first, a page at a time" })
  @ApiOkResponse({ type: SessionPageView })
  @ApiBadRequestResponse({ type: ErrorView, description: '`limit` or `before` is not a valid value (the message names it).' })
  list(@CurrentUser() userId: number, @Query() query: ListSessionsDto): SessionPageView {
    const page = this.sessions.listOwned(userId, { limit: query.limit, before: query.before });
    return { sessions: page.sessions.map((session) => ({ ...session, activeRun: this.runs.isActive(session.id), runStatus: this.runs.runStatus(session.id) })), next: page.next };
  }

  @Post()
  @ApiOperation({ summary: 'Create a session' })
  @ApiCreatedResponse({ type: SessionView })
  @ApiBadRequestResponse({ type: ErrorView })
  create(@CurrentUser() userId: number, @Body() body: CreateSessionDto): SessionRecord {
    return this.sessions.create(userId, body);
  }

  @Get(':id')
  @ApiOkResponse({ type: SessionView })
  @ApiNotFoundResponse({ type: ErrorView, description: 'No such session of the caller.' })
  get(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): SessionRecord {
    return this.sessions.getOwned(id, userId);
  }

  @Patch(':id')
  @ApiOperation({ summary: "Change the session's permission level (from the next tool call on, even mid-run)" })
  @ApiOkResponse({ type: SessionView })
  @ApiBadRequestResponse({ type: ErrorView })
  @ApiNotFoundResponse({ type: ErrorView })
  update(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number, @Body() body: UpdateSessionDto): SessionRecord {
    return this.sessions.updatePermissionLevel(id, userId, body.permissionLevel);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({
    summary: 'Delete a session',
    description:
      'Deletes its messages, activities, attachments, runs and tasks, closes its MCP clients and removes its workspace folder on the ' +
      'server, unless another session of the same user uses the same workspace name (the folder then stays).',
  })
  @ApiNoContentResponse({ description: 'Deleted.' })
  @ApiNotFoundResponse({ type: ErrorView })
  @ApiConflictResponse({ type: ErrorView, description: 'A run (or a background command) of the session is still going; cancel it and retry once it has ended.' })
  async remove(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): Promise<void> {
    await this.deleter.delete(id, userId);
  }

  @Post(':id/messages')
  @HttpCode(202)
  @ApiOperation({ summary: 'Send a message: starts a run, which streams over the WebSocket' })
  @ApiAcceptedResponse({ type: RunStartedView })
  @ApiBadRequestResponse({ type: ErrorView })
  @ApiNotFoundResponse({ type: ErrorView })
  @ApiConflictResponse({ type: ErrorView, description: 'A run is already active.' })
  @ApiServiceUnavailableResponse({ type: ErrorView, description: 'The server is stopping.' })
  postMessage(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number, @Body() body: PostMessageDto): RunStartedView {
    const session = this.sessions.getOwned(id, userId);
    return this.runs.start(session, body.content);
  }

  @Post(':id/cancel')
  @HttpCode(202)
  @ApiOperation({ summary: "Cancel the session's run" })
  @ApiAcceptedResponse({ type: RunCancelledView })
  @ApiNotFoundResponse({ type: ErrorView })
  cancel(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): RunCancelledView {
    this.sessions.getOwned(id, userId);
    return { cancelled: this.runs.cancel(id) };
  }

  @Get(':id/pending')
  @ApiOperation({
    summary: "The session's waits for a person (approvals, questions, desktop tool requests), oldest first",
    description: 'Each with the event its person was sent, as it was sent; they outlive a restart of the server.',
  })
  @ApiOkResponse({ type: [PendingWaitView] })
  @ApiNotFoundResponse({ type: ErrorView })
  pending(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): PendingWaitView[] {
    this.sessions.getOwned(id, userId);
    return this.runs.pendingWaits(id);
  }

  @Get(':id/messages')
  @ApiOkResponse({ type: [MessageView] })
  @ApiNotFoundResponse({ type: ErrorView })
  messages(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): MessageView[] {
    return this.sessions.listMessages(id, userId).map(toMessageView);
  }

  @Get(':id/activities')
  @ApiOkResponse({ type: [ActivityView] })
  @ApiNotFoundResponse({ type: ErrorView })
  activities(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number): ActivityView[] {
    return this.sessions.listActivities(id, userId).map(toActivityView);
  }
}

function toMessageView(record: MessageRecord): MessageView {
  const view: MessageView = { id: record.id, role: record.role, content: record.content, createdAt: record.createdAt };
  if (record.executionId !== null) view.executionId = record.executionId;
  if (record.toolCalls) view.toolCalls = record.toolCalls;
  if (record.toolCallId) view.toolCallId = record.toolCallId;
  if (record.attachments && record.attachments.length > 0) view.attachments = record.attachments;
  return view;
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
