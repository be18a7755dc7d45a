import { ApiProperty } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { PERMISSION_LEVELS, type PermissionLevel } from '../../../harness/tool/permission-level';

/** Body of `PATCH /api/sessions/:id`. */
export class UpdateSessionDto {
  @ApiProperty({ enum: PERMISSION_LEVELS, description: 'Takes effect for the next tool call, even mid-run.' })
  @IsIn(PERMISSION_LEVELS)
  permissionLevel!: PermissionLevel;
}
