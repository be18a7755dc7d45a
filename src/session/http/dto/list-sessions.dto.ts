import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { SESSION_PAGE_SIZE } from '../../service/session-service';

/**
 * A query value as a number when it is written as a plain decimal integer. Anything else (`1.5`,
 * `0x10`, `1e2`, ` 7`, an empty value, a repeated parameter) stays as it came, and `@IsInt` names
 * the field. (The three rules of a field share one message: validation.ts says it once.)
 */
const toInteger = Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^[0-9]{1,16}$/.test(value) ? Number(value) : value));

const LIMIT_RULE = { message: `limit must be an integer from 1 to ${SESSION_PAGE_SIZE.max}` };
const BEFORE_RULE = { message: 'before must be a session id (a positive integer)' };

/** Query of `GET /api/sessions`. */
export class ListSessionsDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: SESSION_PAGE_SIZE.max, default: SESSION_PAGE_SIZE.default, description: 'Sessions per page.' })
  @IsOptional()
  @toInteger
  @IsInt(LIMIT_RULE)
  @Min(1, LIMIT_RULE)
  @Max(SESSION_PAGE_SIZE.max, LIMIT_RULE)
  limit?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: "Only sessions with a lower id: the previous page's `next`." })
  @IsOptional()
  @toInteger
  @IsInt(BEFORE_RULE)
  @Min(1, BEFORE_RULE)
  @Max(Number.MAX_SAFE_INTEGER, BEFORE_RULE)
  before?: number;
}
