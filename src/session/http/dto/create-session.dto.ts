import { ArrayMaxSize, IsArray, IsIn, IsInt, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PERMISSION_LEVELS, type PermissionLevel } from '../../../harness/tool/permission-level';

export const EXECUTION_MODES = ['CLOUD', 'LOCAL'] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];

/** Body of `POST /api/sessions`. */
export class CreateSessionDto {
  @IsIn(EXECUTION_MODES)
  executionMode!: ExecutionMode;

  @IsIn(PERMISSION_LEVELS)
  permissionLevel!: PermissionLevel;

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(500)
  @IsString({ each: true })
  @MaxLength(200, { each: true })
  tools?: string[];

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(100)
  @IsInt({ each: true })
  mcpServers?: number[];

  @IsOptional()
  @IsString()
  @Matches(/^(?!\.{1,2}$)[A-Za-z0-9._-]{1,100}$/, {
    message: 'workspace must be a plain folder name of letters, digits, dots, dashes and underscores',
  })
  workspace?: string;
}
