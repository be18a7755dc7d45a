import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';

/**
 * The production build the benchmark starts (`npm run build`); `HARNESS_BENCH_SERVER` names
 * another one (an older build, to compare).
 */
export const SERVER_MAIN = process.env.HARNESS_BENCH_SERVER ?? path.resolve(__dirname, '../../../dist/main.js');
const READY = /harness listening on (http:\/\/\S+)/;

/** `node dist/main.js` in a scratch folder of its own: a SQLite file, workspaces, tokens. */
export interface BenchServer {
  url: string;
  pid: number;
  /** The token of user `n` (1-based). */
  token(user: number): string;
  /** SIGTERM, then waits for the exit; removes the scratch folder. */
  stop(): Promise<void>;
}

export interface BenchServerOptions {
  /** The scripted model's scenario (`LLM_SCRIPT`). */
  scenario: unknown;
  /** How many users have a token (default 1). */
  users?: number;
  env?: Record<string, string>;
  /** The server's entry point (default `SERVER_MAIN`): another build to compare with. */
  main?: string;
}

/** Starts the real server process, as `npm start` does, with the scripted model. */
export async function startBenchServer(options: BenchServerOptions): Promise<BenchServer> {
  const main = options.main ?? SERVER_MAIN;
  if (!fs.existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` first`);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-bench-'));
  const scriptFile = path.join(scratch, 'scenario.json');
  fs.writeFileSync(scriptFile, JSON.stringify(options.scenario));
  const users = options.users ?? 1;
  const token = (user: number) => `bench-token-${user}`;
  // HARNESS_BENCH_NODE_ARGS: options for the server's node, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
  const nodeArgs = (process.env.HARNESS_BENCH_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, main], {
    cwd: scratch,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      HARNESS_DB: path.join(scratch, 'harness.db'),
      HARNESS_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
      HARNESS_TOKENS: Array.from({ length: users }, (_, i) => `${token(i + 1)}=${i + 1}`).join(','),
      LLM_PROTOCOL: 'scripted',
      LLM_SCRIPT: scriptFile,
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${stdout}\n${stderr}`)), 30_000);
    const check = (): void => {
      const match = READY.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      child.stdout?.off('data', check);
      resolve(match[1]);
    };
    child.stdout?.on('data', check);
    void exited.then(() => reject(new Error(`the server exited before listening:\n${stdout}\n${stderr}`)));
  });
  return {
    url,
    pid: child.pid ?? -1,
    token,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/** A server event as a client receives it, with the time it arrived (`performance.now()`). */
export interface ReceivedEvent {
  type: string;
  sessionId: number | null;
  data: Record<string, unknown>;
  seq?: number;
  receivedAt: number;
}

/** Whether the event ends its run: `message_end`, or an `error` marked final. */
export function endsRun(event: ReceivedEvent): boolean {
  return event.type === 'message_end' || (event.type === 'error' && event.data.final === true);
}

/** One WebSocket client of one user, keeping the events of each run until it is told to forget them. */
export class BenchWatcher {
  private readonly byRun = new Map<string, ReceivedEvent[]>();
  private readonly waiters = new Map<string, (events: ReceivedEvent[]) => void>();
  /** Every event received, in order, when asked to keep them (`keepAll`). */
  readonly all: ReceivedEvent[] = [];
  frames = 0;

  private constructor(
    private readonly socket: WebSocket,
    private readonly keepAll: boolean,
  ) {
    socket.on('message', (raw) => {
      const receivedAt = performance.now();
      this.frames++;
      const event = JSON.parse(raw.toString()) as ReceivedEvent;
      event.receivedAt = receivedAt;
      if (this.keepAll) this.all.push(event);
      const executionId = event.data?.executionId;
      if (typeof executionId !== 'string') return;
      const events = this.byRun.get(executionId) ?? [];
      events.push(event);
      this.byRun.set(executionId, events);
      if (!endsRun(event)) return;
      const waiter = this.waiters.get(executionId);
      if (waiter) {
        this.waiters.delete(executionId);
        waiter(events);
      }
    });
  }

  static connect(server: BenchServer, user = 1, keepAll = false): Promise<BenchWatcher> {
    const socket = new WebSocket(`${server.url.replace(/^http/, 'ws')}/ws?token=${server.token(user)}`);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new BenchWatcher(socket, keepAll)));
      socket.once('error', reject);
    });
  }

  /** Resolves with the run's events once its last one came. */
  runEnded(executionId: string): Promise<ReceivedEvent[]> {
    const events = this.byRun.get(executionId);
    if (events && events.length > 0 && endsRun(events[events.length - 1])) return Promise.resolve(events);
    return new Promise((resolve) => this.waiters.set(executionId, resolve));
  }

  forget(executionId: string): void {
    this.byRun.delete(executionId);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.close();
    });
  }
}

/** HTTP with a keep-alive agent: `fetch` costs a few hundred microseconds more per request. */
export class BenchHttp {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private readonly base: URL;

  constructor(
    private readonly server: BenchServer,
    private readonly user = 1,
  ) {
    this.base = new URL(server.url);
  }

  request<T>(method: string, route: string, body?: unknown): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<T>((resolve, reject) => {
      const req = http.request(
        {
          agent: this.agent,
          hostname: this.base.hostname,
          port: this.base.port,
          method,
          path: route,
          headers: {
            authorization: `Bearer ${this.server.token(this.user)}`,
            ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            if ((res.statusCode ?? 0) >= 300) reject(new Error(`${method} ${route}: ${res.statusCode} ${text}`));
            else resolve((text === '' ? undefined : JSON.parse(text)) as T);
          });
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  async createSession(): Promise<number> {
    return (await this.request<{ id: number }>('POST', '/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' })).id;
  }

  /** Posts a message; resolves with the run's id and when the request was sent (`performance.now()`). */
  async postMessage(sessionId: number, content: string): Promise<{ executionId: string; postedAt: number }> {
    const postedAt = performance.now();
    const { executionId } = await this.request<{ executionId: string }>('POST', `/api/sessions/${sessionId}/messages`, { content });
    return { executionId, postedAt };
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The process's resident memory in bytes (Linux `/proc`), or NaN elsewhere. */
export function residentBytes(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}
