import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import type { SlowServerEvent } from '../../src/demo/mcp-slow-server';

/** The compiled slow MCP server (`src/demo/mcp-slow-server.ts`); tests run it as a real process. */
export const SLOW_MCP_SERVER = path.resolve(__dirname, '../../build/dev/demo/mcp-slow-server.js');
const SLOW_MCP_SERVER_TS = path.resolve(__dirname, '../../src/demo/mcp-slow-server.ts');

/** Fails early on a missing or stale build: a child process runs the compiled server, not the source. */
export function requireBuiltSlowMcpServer(): void {
  if (!existsSync(SLOW_MCP_SERVER)) throw new Error(`${SLOW_MCP_SERVER} is missing: run npm run build:dev first`);
  if (statSync(SLOW_MCP_SERVER).mtimeMs < statSync(SLOW_MCP_SERVER_TS).mtimeMs) {
    throw new Error(`${SLOW_MCP_SERVER} is older than its source: run npm run build:dev first`);
  }
}

/** The slow server over Streamable HTTP, in its own process. */
export interface SlowMcpHttpProcess {
  child: ChildProcess;
  url: string;
  port: number;
  /** Ends the process as a crash would (SIGKILL) and waits for it to be gone. */
  kill(): Promise<void>;
  /** Stops the process (SIGTERM) if it still runs and waits for it to be gone. */
  stop(): Promise<void>;
}

/** Starts the slow server over HTTP on `port` (0: any free port), recording to `recordFile`. */
export async function startSlowMcpHttpServer(recordFile: string, port = 0): Promise<SlowMcpHttpProcess> {
  const child = spawn(process.execPath, [SLOW_MCP_SERVER, '--http', String(port), '--record', recordFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /^mcp-slow-server listening on (\S+)$/m.exec(output);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`mcp-slow-server exited with ${code} before it was ready: ${stderr}`)));
  });
  const end = async (signal: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  return { child, url, port: Number(new URL(url).port), kill: () => end('SIGKILL'), stop: () => end('SIGTERM') };
}

/** What the server recorded so far (an absent file: nothing yet). */
export function readSlowServerRecord(recordFile: string): SlowServerEvent[] {
  if (!existsSync(recordFile)) return [];
  return readFileSync(recordFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as SlowServerEvent);
}
