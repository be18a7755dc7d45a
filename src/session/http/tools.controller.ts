import { Controller, Get, ParseIntPipe, Query } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiQuery, ApiTags } from '@nestjs/swagger';
import { SessionService } from '../service/session-service';
import { ToolCatalog, type ToolCatalogEntry } from '../service/tool-catalog';
import { CurrentUser } from './auth.guard';
import { ErrorView } from './dto/error.view';
import { ToolView } from './dto/tool.view';

/** `GET /api/tools`: the built-in tools and, with `?sessionId=`, that session's MCP tools. */
@ApiTags('tools')
@Controller('api/tools')
export class ToolsController {
  constructor(
    private readonly catalog: ToolCatalog,
    private readonly sessions: SessionService,
  ) {}

  @Get()
  @ApiQuery({ name: 'sessionId', required: false, type: 'integer', description: "Also list this session's MCP tools, as this session runs them." })
  @ApiOkResponse({ type: [ToolView] })
  @ApiNotFoundResponse({ type: ErrorView, description: 'No such session of the caller.' })
  async list(
    @CurrentUser() userId: number,
    @Query('sessionId', new ParseIntPipe({ optional: true })) sessionId?: number,
  ): Promise<ToolCatalogEntry[]> {
    const session = sessionId === undefined ? null : this.sessions.getOwned(sessionId, userId);
    return this.catalog.list(session);
  }
}
