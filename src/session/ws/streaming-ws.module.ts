import { Module } from '@nestjs/common';
import { HARNESS_CONFIG } from '../../config/config.module';
import type { HarnessConfig } from '../../config/harness-config';
import { CLIENT_CONNECTIONS } from '../../harness/harness.module';
import { StreamingWsRegistry } from './streaming-ws-registry';

/**
 * The open WebSocket connections (`StreamingWsRegistry`): the users' event streams, and the
 * harness's `CLIENT_CONNECTIONS` port, so that the LOCAL side sends on the same sockets.
 */
@Module({
  providers: [
    {
      provide: StreamingWsRegistry,
      useFactory: (config: HarnessConfig) => new StreamingWsRegistry({ sendBufferLimitBytes: config.wsSendBufferBytes ?? undefined }),
      inject: [HARNESS_CONFIG],
    },
    { provide: CLIENT_CONNECTIONS, useExisting: StreamingWsRegistry },
  ],
  exports: [StreamingWsRegistry, CLIENT_CONNECTIONS],
})
export class StreamingWsModule {}
