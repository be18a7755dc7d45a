import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiProperty, ApiTags } from '@nestjs/swagger';
import { Public } from './auth.guard';

/** Answer of `GET /health`. */
class HealthView {
  @ApiProperty({ enum: ['ok'] })
  status!: 'ok';
}

@ApiTags('health')
@Controller('health')
export class HealthController {
  @Public()
  @Get()
  @ApiOkResponse({ type: HealthView, description: 'The server is up (no token needed).' })
  health(): HealthView {
    return { status: 'ok' };
  }
}
