import { Module } from '@nestjs/common';
import { HARNESS_CONFIG } from '../../config/config.module';
import type { HarnessConfig } from '../../config/harness-config';
import { PERMISSION_LEVEL_LOOKUP, TASK_STORE } from '../../harness/harness.module';
import { ActivityRepository } from './activity-repository';
import { HarnessDatabase } from './harness-database';
import { MessageRepository } from './message-repository';
import { RunRepository } from './run-repository';
import { SessionRepository } from './session-repository';
import { SqliteTaskStore } from './sqlite-task-store';

/**
 * The SQLite store (`HARNESS_DB`, opened — and its directory created — when the module is built)
 * and its repositories. Also supplies the harness's two ports: `TASK_STORE` (the task tools'
 * lists) and `PERMISSION_LEVEL_LOOKUP` (a session's current permission level).
 */
@Module({
  providers: [
    { provide: HarnessDatabase, useFactory: (config: HarnessConfig) => new HarnessDatabase(config.dbPath), inject: [HARNESS_CONFIG] },
    { provide: SessionRepository, useFactory: (database: HarnessDatabase) => new SessionRepository(database), inject: [HarnessDatabase] },
    { provide: MessageRepository, useFactory: (database: HarnessDatabase) => new MessageRepository(database), inject: [HarnessDatabase] },
    { provide: ActivityRepository, useFactory: (database: HarnessDatabase) => new ActivityRepository(database), inject: [HarnessDatabase] },
    { provide: RunRepository, useFactory: (database: HarnessDatabase) => new RunRepository(database), inject: [HarnessDatabase] },
    { provide: SqliteTaskStore, useFactory: (database: HarnessDatabase) => new SqliteTaskStore(database), inject: [HarnessDatabase] },
    { provide: TASK_STORE, useExisting: SqliteTaskStore },
    { provide: PERMISSION_LEVEL_LOOKUP, useExisting: SessionRepository },
  ],
  exports: [HarnessDatabase, SessionRepository, MessageRepository, ActivityRepository, RunRepository, SqliteTaskStore, TASK_STORE, PERMISSION_LEVEL_LOOKUP],
})
export class PersistenceModule {}
