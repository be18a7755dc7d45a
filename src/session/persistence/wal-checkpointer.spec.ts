import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WalCheckpointer } from './wal-checkpointer';

describe('WalCheckpointer', () => {
  let dir: string;
  let writer: Database.Database;
  let checkpointer: WalCheckpointer | null = null;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-wal-'));
    writer = new Database(path.join(dir, 'data.db'));
    writer.pragma('journal_mode = WAL');
    // Only the thread checkpoints.
    writer.pragma('wal_autocheckpoint = 0');
    writer.exec('CREATE TABLE rows (value TEXT)');
    writer.pragma('wal_checkpoint(TRUNCATE)');
  });

  afterEach(async () => {
    await checkpointer?.close();
    checkpointer = null;
    writer.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The rows the database file holds by itself, without its WAL: what was checkpointed. */
  function rowsInDatabaseFile(): number {
    const copy = path.join(dir, 'copy.db');
    fs.copyFileSync(path.join(dir, 'data.db'), copy);
    const reader = new Database(copy, { readonly: true });
    try {
      return reader.prepare('SELECT COUNT(*) FROM rows').pluck().get() as number;
    } finally {
      reader.close();
    }
  }

  it('copies the committed WAL into the database file from its thread once enough commits piled up', async () => {
    const results: Array<{ frames: number; checkpointed: number }> = [];
    const checkpointed = new Promise<void>((resolve) => {
      checkpointer = new WalCheckpointer(path.join(dir, 'data.db'), { everyCommits: 3, onCheckpoint: (result) => (results.push(result), resolve()) });
    });
    const insert = writer.prepare('INSERT INTO rows VALUES (?)');
    for (let i = 0; i < 3; i++) {
      insert.run(`row ${i}`);
      checkpointer!.noteCommit();
    }
    expect(rowsInDatabaseFile()).toBe(0);
    await checkpointed;
    expect(results).toHaveLength(1);
    expect(results[0].checkpointed).toBe(results[0].frames);
    expect(rowsInDatabaseFile()).toBe(3);
  });

  it('checkpoints once the writes pause, however few there were', async () => {
    const checkpointed = new Promise<void>((resolve) => {
      checkpointer = new WalCheckpointer(path.join(dir, 'data.db'), { everyCommits: 1000, idleMs: 20, onCheckpoint: () => resolve() });
    });
    writer.prepare('INSERT INTO rows VALUES (?)').run('one');
    checkpointer!.noteCommit();
    await checkpointed;
    expect(rowsInDatabaseFile()).toBe(1);
  });

  it('warns and gives up when a checkpoint fails, without throwing', async () => {
    const warnings: string[] = [];
    const failed = new Promise<void>((resolve) => {
      checkpointer = new WalCheckpointer(path.join(dir, 'missing.db'), {
        everyCommits: 1,
        logger: { warn: (message) => (warnings.push(message), resolve()) },
      });
    });
    checkpointer!.noteCommit();
    await failed;
    expect(warnings[0]).toMatch(/the WAL checkpoint failed/);
    expect(checkpointer!.working).toBe(true);
  });
});
