import { Module } from '@nestjs/common';
import { HARNESS_CONFIG } from '../../config/config.module';
import type { HarnessConfig } from '../../config/harness-config';
import { CLIENT_CONNECTIONS } from '../../harness/harness.module';
import { PersistenceModule } from '../persistence/persistence.module';
import { SessionEventLog } from '../persistence/session-event-log';
import { StreamingWsRegistry } from './streaming-ws-registry';

/**
 * The open WebSocket connections (`StreamingWsRegistry`): the users' event streams, numbered and
 * kept in the sessions' event log, and the harness's `CLIENT_CONNECTIONS` port, so that the LOCAL
 * side sends on the same sockets.
 */
@Module({
  imports: [PersistenceModule],
  providers: [
    {
      provide: StreamingWsRegistry,
      useFactory: (config: HarnessConfig, eventLog: SessionEventLog) =>
        new StreamingWsRegistry({ sendBufferLimitBytes: config.wsSendBufferBytes ?? undefined, eventLog }),
      inject: [HARNESS_CONFIG, SessionEventLog],
    },
    { provide: CLIENT_CONNECTIONS, useExisting: StreamingWsRegistry },
  ],
  exports: [StreamingWsRegistry, CLIENT_CONNECTIONS],
})
export class StreamingWsModule {}
