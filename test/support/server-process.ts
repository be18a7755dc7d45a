import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { withTimeout } from './ws-test-client';

const MAIN = path.resolve(__dirname, '../../dist/main.js');
export const READY = /^harness listening on (http:\/\/[^\s:]+:(\d+))$/m;

/** `node dist/main.js` as a child process, with everything it printed so far. */
export interface ServerProcess {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts the built server with only the given environment. `cwd` (default: the test's) matters
 * for relative paths in the configuration, as `npm start` resolves them from the repository root.
 */
export function spawnServer(env: Record<string, string>, cwd?: string): ServerProcess {
  // Only what the server needs: no HARNESS_* or LLM_* variables leak in from the test's environment.
  const child = spawn(process.execPath, [MAIN], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Kills a server a test left running (SIGKILL) and waits for it to exit; one that already exited, or none, is left alone. */
export async function killIfRunning(server: ServerProcess | null): Promise<void> {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill('SIGKILL');
  await server.exited;
}

/** Resolves with the URL from the ready line; fails if the process exits or stays silent. */
export async function waitUntilListening(server: ServerProcess, timeoutMs = 10_000): Promise<string> {
  const ready = new Promise<string>((resolve, reject) => {
    const check = () => {
      const match = READY.exec(server.stdout());
      if (match) {
        server.child.stdout?.off('data', check);
        resolve(match[1]);
      }
    };
    server.child.stdout?.on('data', check);
    void server.exited.then(({ code, signal }) =>
      reject(new Error(`server exited (code ${code}, signal ${signal}) before listening:\n${server.stdout()}\n${server.stderr()}`)),
    );
    check();
  });
  return withTimeout(ready, timeoutMs, `no ready line; stdout so far:\n${server.stdout()}`);
}

/** Polls an async condition (for state another process owns, which sends no event). */
export async function waitUntil(condition: () => Promise<boolean>, description: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${description}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The environment of a server process that keeps its database and workspaces in `scratch` (so a
 * restart finds them again) and talks to an OpenAI-compatible fake model at `providerUrl`.
 */
export function fileServerEnv(scratch: string, token: string, providerUrl: string): Record<string, string> {
  return {
    PORT: '0',
    HARNESS_DB: path.join(scratch, 'harness.db'),
    HARNESS_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
    HARNESS_TOKENS: `${token}=1`,
    LLM_PROTOCOL: 'openai',
    LLM_BASE_URL: providerUrl,
    LLM_API_KEY: 'sk-fake',
    LLM_MODEL: 'fake-model',
  };
}
