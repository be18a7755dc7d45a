import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import type { ToolAnnotations, ToolExecutor, ToolSource } from '../../../harness/tool/tool-descriptor';
import type { ToolCatalogEntry } from '../../service/tool-catalog';

/** MCP's tool annotations: hints, counted only for our own tools and trusted MCP servers. */
export class ToolAnnotationsView implements ToolAnnotations {
  @ApiPropertyOptional({ description: 'The tool changes nothing.' })
  readOnlyHint?: boolean;

  @ApiPropertyOptional({ description: 'When it changes something, it may destroy or overwrite.' })
  destructiveHint?: boolean;

  @ApiPropertyOptional({ description: 'Calling it again with the same arguments has no further effect.' })
  idempotentHint?: boolean;

  @ApiPropertyOptional({ description: 'It reaches beyond a closed domain.' })
  openWorldHint?: boolean;
}

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

  @ApiPropertyOptional({ description: 'A human title for display.' })
  title?: string;

  @ApiPropertyOptional({ type: () => ToolAnnotationsView, description: "The tool's hints about its behaviour (MCP's vocabulary)." })
  annotations?: ToolAnnotationsView;

  @ApiPropertyOptional({ description: "MCP tools: the server is marked trusted, so its annotations count in approvals." })
  trusted?: boolean;

  @ApiPropertyOptional({ description: "Runs on the server in every mode and changes only the session's own records (the task tools)." })
  serverOnly?: boolean;

  @ApiPropertyOptional({ description: 'Changes files of the session workspace.' })
  writesFiles?: boolean;

  @ApiPropertyOptional({ description: 'Runs arbitrary commands.' })
  runsCommands?: boolean;

  @ApiProperty()
  description!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'JSON Schema of the arguments.' })
  inputSchema!: Record<string, unknown>;
}
