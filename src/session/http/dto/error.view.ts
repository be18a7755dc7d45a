import { ApiProperty } from '@nestjs/swagger';

/** Every error answer of the HTTP API (see `HarnessExceptionFilter`). */
export class ErrorView {
  @ApiProperty({ type: 'integer', example: 400 })
  statusCode!: number;

  @ApiProperty({ description: 'What went wrong; for bad input it names the field.', example: 'limit must not be greater than 100' })
  message!: string;
}
