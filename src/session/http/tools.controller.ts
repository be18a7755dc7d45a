import { Controller, Get, ParseIntPipe, Query } from '@nestjs/common';
import { SessionService } from '../service/session-service';
import { ToolCatalog, type ToolCatalogEntry } from '../service/tool-catalog';
import { CurrentUser } from './auth.guard';

/** `GET /api/tools`: the built-in tools and, with `?sessionId=`, that session's MCP tools. */
@Controller('api/tools')
export class ToolsController {
  constructor(
    private readonly catalog: ToolCatalog,
    private readonly sessions: SessionService,
  ) {}

  @Get()
  async list(
    @CurrentUser() userId: number,
    @Query('sessionId', new ParseIntPipe({ optional: true })) sessionId?: number,
  ): Promise<ToolCatalogEntry[]> {
    const session = sessionId === undefined ? null : this.sessions.getOwned(sessionId, userId);
    return this.catalog.list(session);
  }
}
