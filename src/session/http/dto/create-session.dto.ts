import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PERMISSION_LEVELS, type PermissionLevel } from '../../../harness/tool/permission-level';

export const EXECUTION_MODES = ['CLOUD', 'LOCAL'] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];

/** Body of `POST /api/sessions`. */
export class CreateSessionDto {
  @ApiProperty({ enum: EXECUTION_MODES, description: 'Where the tools run: on the server (CLOUD) or on the desktop client (LOCAL).' })
  @IsIn(EXECUTION_MODES)
  executionMode!: ExecutionMode;

  @ApiProperty({ enum: PERMISSION_LEVELS, description: 'How much tools may do without asking the user.' })
  @IsIn(PERMISSION_LEVELS)
  permissionLevel!: PermissionLevel;

  @ApiPropertyOptional({ type: [String], maxItems: 500, description: 'The tools the session may use; omitted: every tool.' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(500)
  @IsString({ each: true })
  @MaxLength(200, { each: true })
  tools?: string[];

  @ApiPropertyOptional({ type: 'integer', isArray: true, maxItems: 100, description: 'Ids of configured MCP servers the session connects to.' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsInt({ each: true })
  mcpServers?: number[];

  @ApiPropertyOptional({
    pattern: '^(?!\\.{1,2}$)[A-Za-z0-9._-]{1,100}$',
    description: 'Workspace folder name; omitted: a new folder of its own. Sessions of one user that name the same workspace share its folder.',
  })
  @IsOptional()
  @IsString()
  @Matches(/^(?!\.{1,2}$)[A-Za-z0-9._-]{1,100}$/, {
    message: 'workspace must be a plain folder name of letters, digits, dots, dashes and underscores',
  })
  workspace?: string;
}
