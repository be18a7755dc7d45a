import { Logger, Module } from '@nestjs/common';
import { HARNESS_CONFIG } from '../../config/config.module';
import type { HarnessConfig } from '../../config/harness-config';
import { ATTACHMENT_STORE, PERMISSION_LEVEL_LOOKUP, TASK_STORE, WAIT_STORE } from '../../harness/harness.module';
import { ActivityRepository } from './activity-repository';
import { HarnessDatabase } from './harness-database';
import { MessageRepository } from './message-repository';
import { RunRepository } from './run-repository';
import { SessionEventLog } from './session-event-log';
import { SessionRepository } from './session-repository';
import { SqliteAttachmentStore } from './sqlite-attachment-store';
import { SqliteTaskStore } from './sqlite-task-store';
import { WaitRepository } from './wait-repository';

/**
 * The SQLite store (`HARNESS_DB`, opened — and its directory created — when the module is built),
 * its repositories and the sessions' event log (`SessionEventLog`). Also supplies the harness's
 * four ports: `TASK_STORE` (the task tools' lists), `PERMISSION_LEVEL_LOOKUP` (a session's current
 * permission level), `ATTACHMENT_STORE` (binary parts of tool results) and `WAIT_STORE` (waits for
 * a person, `WaitRepository`).
 */
@Module({
  providers: [
    { provide: HarnessDatabase, useFactory: (config: HarnessConfig) => new HarnessDatabase(config.dbPath), inject: [HARNESS_CONFIG] },
    { provide: SessionRepository, useFactory: (database: HarnessDatabase) => new SessionRepository(database), inject: [HarnessDatabase] },
    { provide: SqliteAttachmentStore, useFactory: (database: HarnessDatabase) => new SqliteAttachmentStore(database), inject: [HarnessDatabase] },
    {
      provide: MessageRepository,
      useFactory: (database: HarnessDatabase, attachments: SqliteAttachmentStore) => new MessageRepository(database, attachments),
      inject: [HarnessDatabase, SqliteAttachmentStore],
    },
    { provide: ActivityRepository, useFactory: (database: HarnessDatabase) => new ActivityRepository(database), inject: [HarnessDatabase] },
    { provide: RunRepository, useFactory: (database: HarnessDatabase) => new RunRepository(database), inject: [HarnessDatabase] },
    {
      provide: SessionEventLog,
      useFactory: (database: HarnessDatabase, config: HarnessConfig) =>
        new SessionEventLog(database, { maxEventsPerSession: config.eventLogMaxPerSession, logger: new Logger('SessionEventLog') }),
      inject: [HarnessDatabase, HARNESS_CONFIG],
    },
    { provide: SqliteTaskStore, useFactory: (database: HarnessDatabase) => new SqliteTaskStore(database), inject: [HarnessDatabase] },
    {
      provide: WaitRepository,
      useFactory: (database: HarnessDatabase) => new WaitRepository(database, new Logger('WaitRepository')),
      inject: [HarnessDatabase],
    },
    { provide: WAIT_STORE, useExisting: WaitRepository },
    { provide: TASK_STORE, useExisting: SqliteTaskStore },
    { provide: PERMISSION_LEVEL_LOOKUP, useExisting: SessionRepository },
    { provide: ATTACHMENT_STORE, useExisting: SqliteAttachmentStore },
  ],
  exports: [
    HarnessDatabase,
    SessionRepository,
    MessageRepository,
    ActivityRepository,
    RunRepository,
    SessionEventLog,
    SqliteTaskStore,
    SqliteAttachmentStore,
    WaitRepository,
    WAIT_STORE,
    TASK_STORE,
    PERMISSION_LEVEL_LOOKUP,
    ATTACHMENT_STORE,
  ],
})
export class PersistenceModule {}
