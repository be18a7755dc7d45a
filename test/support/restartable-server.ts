import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FakeOpenAiProvider } from './fake-openai-provider';
import { HttpClient } from './http-client';
import { fileServerEnv, killIfRunning, spawnServer, waitUntilListening, type ServerProcess } from './server-process';
import { withTimeout, WsTestClient } from './ws-test-client';

/** A started server process: its URL, an API client and a WebSocket client of `token`'s user. */
export interface StartedServer {
  url: string;
  api: HttpClient;
  client: WsTestClient;
}

/**
 * A server process that a test stops (SIGTERM, SIGKILL) and starts again on the same database
 * file and workspaces, in a scratch folder of its own, against a fake OpenAI-compatible provider
 * that outlives the restarts. `dispose` kills what is left and removes the folder.
 */
export class RestartableServer {
  /** The process started last (it may have exited). */
  process: ServerProcess | null = null;
  private readonly clients: WsTestClient[] = [];

  private constructor(
    readonly scratch: string,
    readonly provider: FakeOpenAiProvider,
    private readonly token: string,
  ) {}

  static async create(token: string, prefix: string): Promise<RestartableServer> {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    return new RestartableServer(scratch, await FakeOpenAiProvider.start(), token);
  }

  get databaseFile(): string {
    return path.join(this.scratch, 'harness.db');
  }

  /** A file of `user`'s server workspace `workspace`. */
  workspaceFile(workspace: string, file: string, user = 1): string {
    return path.join(this.scratch, 'workspaces', `user-${user}`, workspace, file);
  }

  /** Starts the server with `env` over the file-based defaults; resolves once it listens and a client is connected. */
  async start(env: Record<string, string> = {}): Promise<StartedServer> {
    this.process = spawnServer({ ...fileServerEnv(this.scratch, this.token, this.provider.url), ...env });
    const url = await waitUntilListening(this.process);
    const client = await this.connect(url, this.token);
    return { url, api: new HttpClient(url, this.token), client };
  }

  /** A WebSocket client of another token, closed with the others. */
  async connect(url: string, token: string): Promise<WsTestClient> {
    const client = await WsTestClient.connect(url, token);
    this.clients.push(client);
    return client;
  }

  /** Stops the server with `signal`; resolves with how it exited. */
  async stop(signal: 'SIGTERM' | 'SIGKILL', timeoutMs = 12_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const server = this.process!;
    server.child.kill(signal);
    return withTimeout(server.exited, timeoutMs, `the server did not exit on ${signal}`);
  }

  /** Reads the database file, read-only, as the server left it. */
  readDb<T>(read: (db: Database.Database) => T): T {
    const db = new Database(this.databaseFile, { readonly: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  }

  async dispose(): Promise<void> {
    await Promise.all(this.clients.splice(0).map((client) => client.close()));
    await killIfRunning(this.process);
    this.process = null;
    await this.provider.close();
    fs.rmSync(this.scratch, { recursive: true, force: true });
  }
}
