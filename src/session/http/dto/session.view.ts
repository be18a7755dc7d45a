import { ApiProperty } from '@nestjs/swagger';
import { PERMISSION_LEVELS, type PermissionLevel } from '../../../harness/tool/permission-level';
import type { SessionRecord } from '../../persistence/session-repository';
import { EXECUTION_MODES, type ExecutionMode } from './create-session.dto';

/** A session as the HTTP API answers it (`POST /api/sessions`, `GET`/`PATCH /api/sessions/:id`). */
export class SessionView implements SessionRecord {
  @ApiProperty({ type: 'integer' })
  id!: number;

  @ApiProperty({ type: 'integer' })
  userId!: number;

  @ApiProperty({ enum: EXECUTION_MODES })
  executionMode!: ExecutionMode;

  @ApiProperty({ enum: PERMISSION_LEVELS })
  permissionLevel!: PermissionLevel;

  @ApiProperty({ type: [String], nullable: true, description: '`null`: every tool.' })
  tools!: string[] | null;

  @ApiProperty({ type: 'integer', isArray: true, description: 'Ids of the MCP servers the session uses.' })
  mcpServers!: number[];

  @ApiProperty({ description: 'The workspace folder name; the server keeps it at HARNESS_WORKSPACE_ROOT/user-<userId>/<workspace>.' })
  workspace!: string;

  @ApiProperty({ format: 'date-time' })
  createdAt!: string;
}

/** A session as `GET /api/sessions` lists it. */
export class SessionListItemView extends SessionView {
  @ApiProperty({ description: 'Whether a run of the session is going now (running, or waiting for a person).' })
  activeRun!: boolean;

  @ApiProperty({
    enum: ['running', 'waiting'],
    nullable: true,
    description: '`waiting`: the run waits for a person (an approval, a question, a desktop tool request; see `GET /api/sessions/:id/pending`), also across a restart. `null`: no run is going.',
  })
  runStatus!: 'running' | 'waiting' | null;
}

/** One page of `GET /api/sessions`. */
export class SessionPageView {
  @ApiProperty({ type: [SessionListItemView], description: 'Newest (highest id) first.' })
  sessions!: SessionListItemView[];

  @ApiProperty({ type: 'integer', nullable: true, description: 'Pass as `before` for the next page; `null` on the last page.' })
  next!: number | null;
}

/** Answer of `POST /api/sessions/:id/messages`. */
export class RunStartedView {
  @ApiProperty({ description: 'The run; its WebSocket events carry it as `data.executionId`.' })
  executionId!: string;
}

/** Answer of `POST /api/sessions/:id/cancel`. */
export class RunCancelledView {
  @ApiProperty({ description: 'Whether a run was active.' })
  cancelled!: boolean;
}
