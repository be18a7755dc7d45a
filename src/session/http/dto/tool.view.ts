import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { ToolExecutor, ToolSource } from '../../../harness/tool/tool-descriptor';
import type { ToolCatalogEntry } from '../../service/tool-catalog';

/** One tool as `GET /api/tools` lists it. */
export class ToolView implements ToolCatalogEntry {
  @ApiProperty({ description: 'The name the model calls the tool by (`mcp__<server>__<tool>` for MCP tools).' })
  name!: string;

  @ApiProperty({ enum: ['builtin', 'mcp'] })
  source!: ToolSource;

  @ApiProperty({ enum: ['server', 'desktop', 'mcp-server'], description: 'Where calls of the tool run.' })
  executor!: ToolExecutor;

  @ApiPropertyOptional({ type: 'integer', description: 'MCP tools: the MCP server id.' })
  serverId?: number;

  @ApiPropertyOptional({ description: "MCP tools: the tool's own name on its server." })
  originalName?: string;

  @ApiProperty()
  description!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'JSON Schema of the arguments.' })
  inputSchema!: Record<string, unknown>;
}
