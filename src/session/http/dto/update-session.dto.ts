import { IsIn } from 'class-validator';
import { PERMISSION_LEVELS, type PermissionLevel } from '../../../harness/tool/permission-level';

/** Body of `PATCH /api/sessions/:id`. */
export class UpdateSessionDto {
  @IsIn(PERMISSION_LEVELS)
  permissionLevel!: PermissionLevel;
}
