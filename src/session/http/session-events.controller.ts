import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { SessionEventLog } from '../persistence/session-event-log';
import { SessionService } from '../service/session-service';
import { CurrentUser } from './auth.guard';
import { ErrorView } from './dto/error.view';
import { SESSION_ID_PIPE } from './session-id.pipe';

/** Events per page when the request does not say. */
export const DEFAULT_EVENTS_PAGE = 500;
/** Most events one page may ask for. */
export const MAX_EVENTS_PAGE = 1000;

/**
 * A query value as a number when it is written as a plain decimal integer; anything else stays
 * as it came, and `@IsInt` names the field.
 */
const toInteger = Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^[0-9]{1,16}$/.test(value) ? Number(value) : value));

/** Query of `GET /api/sessions/:id/events`. */
export class SessionEventsQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, default: 0, description: 'Only events with a greater `seq`: the last one the client has.' })
  @IsOptional()
  @toInteger
  @IsInt()
  @Min(0)
  @Max(Number.MAX_SAFE_INTEGER)
  after?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_EVENTS_PAGE, default: DEFAULT_EVENTS_PAGE, description: 'Events per page.' })
  @IsOptional()
  @toInteger
  @IsInt()
  @Min(1)
  @Max(MAX_EVENTS_PAGE)
  limit?: number;
}

/** One page of a session's event log. */
export class SessionEventsPageView {
  @ApiProperty({
    type: 'array',
    items: { type: 'object' },
    description: 'Oldest first, each exactly as the WebSocket sent it: `{"type","sessionId","data","timestamp","seq"}`.',
  })
  events!: unknown[];

  @ApiProperty({ type: 'integer', nullable: true, description: 'The `after` of the following page; `null` when no stored event follows.' })
  next!: number | null;
}

/**
 * `GET /api/sessions/:id/events?after=SEQ&limit=N`: the session's event log, for a client that
 * was away — what it missed, in order, as the WebSocket sent it. It then subscribes over the
 * WebSocket with the last `seq` it read. Another user's session is a 404, like every session route.
 */
@ApiTags('sessions')
@Controller('api/sessions')
export class SessionEventsController {
  constructor(
    private readonly sessions: SessionService,
    private readonly events: SessionEventLog,
  ) {}

  @Get(':id/events')
  @ApiOperation({
    summary: "The session's stored events after a seq, a page at a time",
    description:
      'Every event the WebSocket sent for the session, numbered from 1 (`seq`); the oldest are dropped past the retention bound, so a ' +
      'first event with a `seq` above `after + 1` means the ones between are gone.',
  })
  @ApiOkResponse({ type: SessionEventsPageView })
  @ApiBadRequestResponse({ type: ErrorView, description: '`after` or `limit` is not a valid value (the message names it).' })
  @ApiNotFoundResponse({ type: ErrorView, description: 'No such session of the caller.' })
  list(@CurrentUser() userId: number, @Param('id', SESSION_ID_PIPE) id: number, @Query() query: SessionEventsQuery): SessionEventsPageView {
    this.sessions.getOwned(id, userId);
    const limit = query.limit ?? DEFAULT_EVENTS_PAGE;
    // One event more than asked says whether another page follows.
    const stored = this.events.read(id, query.after ?? 0, limit + 1);
    const page = stored.slice(0, limit);
    return {
      events: page.map((event) => JSON.parse(event.json) as unknown),
      next: stored.length > limit ? page[page.length - 1].seq : null,
    };
  }
}
