import { Controller, Get, NotFoundException, Param, Res } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { ServerResponse } from 'node:http';
import { normalizeMediaType, SqliteAttachmentStore } from '../persistence/sqlite-attachment-store';
import { SessionService } from '../service/session-service';
import { CurrentUser } from './auth.guard';
import { contentDisposition } from './content-disposition';
import { ErrorView } from './dto/error.view';
import { SESSION_ID_PIPE } from './session-id.pipe';

/**
 * `GET /api/sessions/:id/attachments/:attachmentId`: the raw bytes of a tool result's stored
 * attachment, as its owner's client shows or downloads them. Another user's session, another
 * session's attachment and an unknown id are all the same 404.
 */
@ApiTags('sessions')
@Controller('api/sessions')
export class AttachmentsController {
  constructor(
    private readonly sessions: SessionService,
    private readonly attachments: SqliteAttachmentStore,
  ) {}

  @Get(':id/attachments/:attachmentId')
  @ApiOkResponse({
    description: 'The stored bytes; `content-type` is the stored media type.',
    content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
  })
  @ApiNotFoundResponse({ type: ErrorView, description: 'No such attachment in a session of the caller.' })
  read(
    @CurrentUser() userId: number,
    @Param('id', SESSION_ID_PIPE) id: number,
    @Param('attachmentId') attachmentId: string,
    @Res() response: ServerResponse,
  ): void {
    this.sessions.getOwned(id, userId);
    const attachment = this.attachments.read(id, attachmentId);
    if (!attachment) throw new NotFoundException(`attachment ${attachmentId} not found`);
    const data = Buffer.from(attachment.data.buffer, attachment.data.byteOffset, attachment.data.byteLength);
    response.statusCode = 200;
    // The store keeps only valid media types; checking again keeps a damaged row out of the header.
    response.setHeader('content-type', normalizeMediaType(attachment.mediaType));
    response.setHeader('content-length', data.byteLength);
    if (attachment.name !== undefined) response.setHeader('content-disposition', contentDisposition('inline', attachment.name));
    // Bytes from tools and MCP servers: never sniffed into another type, never run as a page of
    // this origin (an HTML or SVG attachment opened directly gets no script and no origin).
    response.setHeader('x-content-type-options', 'nosniff');
    response.setHeader('content-security-policy', "default-src 'none'; sandbox");
    response.setHeader('cache-control', 'private, no-cache');
    response.end(data);
  }
}
