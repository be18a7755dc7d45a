import { spawnSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

import { BackgroundTaskManager, type BackgroundTaskResult } from '../../runtime/background-task-manager';
import type { ToolReturn } from '../tool';
import { ToolCallContext } from '../tool-call-context';
import { DEFAULT_SHELL_PATH, shellEnvironment } from './shell-environment';
import { probeNamespaceIsolationSync, ShellIsolation, type ShellIsolationOptions } from './shell-isolation';
import { SHELL_DISABLED_ERROR, SHELL_NOT_STARTED_ERROR, ShellTool, type ShellToolOptions } from './shell-tool';
import { failureJson, failureMessage, outcomeOf, successJson } from './testing/tool-return';

const SESSION = 5;
const USER = 9;

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // A killed child not yet reaped by init still answers signal 0; it is not running.
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** Resolves once `done()` holds, failing if it does not within `ms` of the call. */
async function within(ms: number, done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let uniqueArg = 0;
/** A number no other process on the host has among its arguments: `sleep` takes it as seconds. */
const sleepArg = () => `${600 + (process.pid % 1000)}.${Date.now() % 100000}${uniqueArg++}`;

/** Runs `execute` as the dispatcher runs a call that can be cancelled: in a scope holding `signal`. */
function inCall<T>(signal: AbortSignal, execute: () => Promise<T>): Promise<T> {
  return ToolCallContext.runScope({ callId: 'call-1', signal }, execute);
}

/**
 * Starts `command` (which must run `sleep` with each of `sleeps`) in a cancellable call, waits
 * until every sleep runs, then aborts the call. Gives the call's answer and the host pids of the
 * sleeps and of every process with the command among its arguments (the shell, and for a confined
 * launch `unshare` and the namespace's init).
 */
async function cancelWhileRunning(start: (signal: AbortSignal) => Promise<ToolReturn>, command: string, sleeps: string[]) {
  const controller = new AbortController();
  const answer = start(controller.signal);
  const sleepPids = await eventually(() => {
    const found = sleeps.map((arg) => processesWith(arg));
    return found.every((pids) => pids.length === 1) ? found.flat() : undefined;
  }, 'the sleeps to start');
  const pids = [...sleepPids, ...processesWith(command)];
  controller.abort();
  return { answer: await answer, sleepPids, pids };
}

async function eventually<T>(probe: () => T | undefined, what: string): Promise<T> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('ShellTool', () => {
  let workspace: string;
  const strayPids: number[] = [];

  beforeEach(async () => {
    workspace = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'harness-shell-')));
  });

  afterEach(async () => {
    for (const pid of strayPids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await fs.rm(workspace, { recursive: true, force: true });
  });

  const shell = (options: Partial<ShellToolOptions> = {}) => new ShellTool({ enabled: true, ...options });
  const run = async (args: Record<string, unknown>, tool = shell()) => tool.execute(JSON.stringify(args), SESSION, USER, workspace);

  it('runs the command with /bin/sh in the workspace and reports exit code and output', async () => {
    await fs.writeFile(path.join(workspace, 'marker.txt'), '');
    expect(successJson(await run({ command: 'pwd; ls' }))).toEqual({ exit_code: 0, stdout: `${workspace}\nmarker.txt\n`, stderr: '' });
  });

  it('reports a non-zero exit code and stderr', async () => {
    expect(failureJson(await run({ command: 'echo oops >&2; exit 3' }))).toEqual({ exit_code: 3, stdout: '', stderr: 'oops\n' });
  });

  describe('the outcome it states', () => {
    it('is a success for exit code 0', async () => {
      expect(outcomeOf(await run({ command: 'echo ok' }))).toEqual({ text: '{"exit_code":0,"stdout":"ok\\n","stderr":""}', isError: false });
    });

    it('is a failure for a non-zero exit code, with the same text and a short reason', async () => {
      expect(outcomeOf(await run({ command: 'exit 2' }))).toEqual({
        text: '{"exit_code":2,"stdout":"","stderr":""}',
        isError: true,
        errorMessage: 'the command exited with code 2',
      });
    });

    it('is a failure for a command killed by a signal or by the timeout, saying which', async () => {
      expect(outcomeOf(await run({ command: 'kill -TERM $$' })).errorMessage).toBe('the command was killed by SIGTERM');
      expect(outcomeOf(await run({ command: 'sleep 30', timeout_ms: 200 }))).toEqual({
        text: '{"exit_code":124,"stdout":"","stderr":"","timed_out":true}',
        isError: true,
        errorMessage: 'the command did not finish within 200 ms; it was killed',
      });
    });

    it('is a failure with its reason for a refused call', async () => {
      const message = "'command' must not be empty";
      expect(outcomeOf(await run({ command: '' }))).toEqual({ text: JSON.stringify({ error: message }), isError: true, errorMessage: message });
    });

    it('is a success for the start of an async:true command, whose own failure arrives later as text', async () => {
      const background = new BackgroundTaskManager();
      const started = outcomeOf(await run({ command: 'exit 2', async: true }, shell({ background })));
      expect(started).toEqual({ text: expect.stringContaining('"status":"started"'), isError: false });
      const [finished] = await eventually<BackgroundTaskResult[]>(() => {
        const drained = background.drainCompleted(SESSION);
        return drained.length > 0 ? drained : undefined;
      }, 'the background result');
      expect(finished.result).toBe('{"exit_code":2,"stdout":"","stderr":""}');
    });
  });

  it('reports death by a signal as 128 + the signal number', async () => {
    expect(failureJson(await run({ command: 'kill -TERM $$' })).exit_code).toBe(128 + os.constants.signals.SIGTERM);
  });

  it('gives the command the session and user ids', async () => {
    expect(successJson(await run({ command: 'echo "$HARNESS_SESSION_ID/$HARNESS_USER_ID"' })).stdout).toBe('5/9\n');
  });

  it('runs with only a workspace (no session), without the id variables', async () => {
    const result = successJson(await shell({ env: { PATH: process.env.PATH } }).execute('{"command":"echo \\"[$HARNESS_SESSION_ID]\\""}', workspace));
    expect(result).toEqual({ exit_code: 0, stdout: '[]\n', stderr: '' });
  });

  describe('when the command runs too long', () => {
    it('kills the whole process group and reports exit code 124 with timed_out', async () => {
      const result = failureJson(await run({ command: 'sleep 30 & echo $! > child.pid; wait', timeout_ms: 1000 }));
      expect(result).toEqual({ exit_code: 124, stdout: '', stderr: '', timed_out: true });
      const child = Number(await fs.readFile(path.join(workspace, 'child.pid'), 'utf8'));
      strayPids.push(child);
      await eventually(() => (isRunning(child) ? undefined : true), 'the background child to die');
    });

    it('uses the configured default timeout', async () => {
      expect(failureJson(await run({ command: 'sleep 30' }, shell({ timeoutMs: 200 })))).toEqual(expect.objectContaining({ timed_out: true }));
    });

    it('refuses a timeout_ms above the maximum', async () => {
      expect(failureMessage(await run({ command: 'true', timeout_ms: 5000 }, shell({ timeoutMs: 100, maxTimeoutMs: 1000 })))).toBe(
        "'timeout_ms' must be at most 1000, got 5000",
      );
    });
  });

  describe("when the call's signal fires", () => {
    const runInCall = (signal: AbortSignal, args: Record<string, unknown>, tool = shell()) => inCall(signal, () => run(args, tool));

    it('kills the command and what it put in the background within a second, and answers that it was cancelled', async () => {
      const [child, nohupChild, foreground] = [sleepArg(), sleepArg(), sleepArg()];
      const command = `sleep ${child} & echo $! > child.pid; nohup sleep ${nohupChild} > /dev/null 2>&1 & sleep ${foreground}; touch done`;
      const { answer, sleepPids, pids } = await cancelWhileRunning((signal) => runInCall(signal, { command }), command, [child, nohupChild, foreground]);
      strayPids.push(...pids);
      expect(failureMessage(answer)).toBe('the command was cancelled before it finished; it was killed');
      expect(Number(await fs.readFile(path.join(workspace, 'child.pid'), 'utf8'))).toBe(sleepPids[0]);
      expect(pids).toHaveLength(4); // the three sleeps and the shell
      await within(1000, () => pids.every((pid) => !isRunning(pid)), 'the death of every process');
      await expect(fs.access(path.join(workspace, 'done'))).rejects.toThrow();
    });

    it("names the call's time limit when that is what fired", async () => {
      expect(failureMessage(await runInCall(AbortSignal.timeout(100), { command: 'sleep 30' }))).toBe(
        "the command was cancelled: the call's time limit passed; it was killed",
      );
    });

    it('runs nothing when the signal fired before the call started', async () => {
      const controller = new AbortController();
      controller.abort();
      const background = new BackgroundTaskManager();
      expect(failureMessage(await runInCall(controller.signal, { command: 'touch ran' }))).toBe(SHELL_NOT_STARTED_ERROR);
      expect(failureMessage(await runInCall(controller.signal, { command: 'touch ran', async: true }, shell({ background })))).toBe(SHELL_NOT_STARTED_ERROR);
      expect(background.runningCount(SESSION)).toBe(0);
      await expect(fs.access(path.join(workspace, 'ran'))).rejects.toThrow();
    });

    it('stops listening to the signal once the command has finished', async () => {
      const controller = new AbortController();
      expect(successJson(await runInCall(controller.signal, { command: 'echo fine' }))).toEqual({ exit_code: 0, stdout: 'fine\n', stderr: '' });
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    });

    it('leaves an async:true command running: it belongs to the session, not to the call', async () => {
      const background = new BackgroundTaskManager();
      const controller = new AbortController();
      const started = successJson(await runInCall(controller.signal, { command: 'sleep 0.3; echo finished', async: true }, shell({ background })));
      expect(started.status).toBe('started');
      controller.abort();
      const [finished] = await eventually<BackgroundTaskResult[]>(() => {
        const drained = background.drainCompleted(SESSION);
        return drained.length > 0 ? drained : undefined;
      }, 'the background result');
      expect(JSON.parse(finished.result)).toEqual({ exit_code: 0, stdout: 'finished\n', stderr: '' });
    });
  });

  it('does not wait for a background job that keeps the output open after the shell exits', async () => {
    const result = successJson(await run({ command: 'sleep 30 & echo $!', timeout_ms: 20_000 }));
    strayPids.push(Number(String(result.stdout).trim()));
    expect(result).toEqual({ exit_code: 0, stdout: expect.stringMatching(/^\d+\n$/), stderr: '' });
  });

  it('caps each stream at maxOutputBytes and says so', async () => {
    const result = successJson(await run({ command: "head -c 5000 /dev/zero | tr '\\0' a; echo err >&2" }, shell({ maxOutputBytes: 100 })));
    expect(result).toEqual({
      exit_code: 0,
      stdout: `${'a'.repeat(100)}\n[output truncated: 4900 more bytes]`,
      stderr: 'err\n',
      truncated: true,
    });
  });

  it('answers the fixed error when disabled, running nothing', async () => {
    expect(failureMessage(await run({ command: 'touch ran' }, new ShellTool({ enabled: false })))).toBe(SHELL_DISABLED_ERROR);
    expect(SHELL_DISABLED_ERROR).toBe('shell is disabled on this server (HARNESS_CLOUD_SHELL=off)');
    await expect(fs.access(path.join(workspace, 'ran'))).rejects.toThrow();
  });

  describe('with async:true', () => {
    it('starts the command in the background and delivers its result through the manager', async () => {
      const background = new BackgroundTaskManager();
      const started = successJson(await run({ command: 'echo done', async: true }, shell({ background })));
      expect(started).toEqual(expect.objectContaining({ status: 'started', task_id: expect.any(String) }));
      const [finished] = await eventually<BackgroundTaskResult[]>(() => {
        const drained = background.drainCompleted(SESSION);
        return drained.length > 0 ? drained : undefined;
      }, 'the background result');
      expect(finished).toEqual({
        taskId: started.task_id,
        sessionId: SESSION,
        description: 'shell: echo done',
        result: '{"exit_code":0,"stdout":"done\\n","stderr":""}',
      });
    });

    it('answers at once while the command still runs', async () => {
      const background = new BackgroundTaskManager();
      const started = successJson(await run({ command: 'sleep 0.3; echo late', async: true }, shell({ background })));
      expect(started.status).toBe('started');
      expect(background.runningCount(SESSION)).toBe(1);
      await eventually(() => (background.runningCount(SESSION) === 0 ? true : undefined), 'the command to finish');
    });

    it('refuses without a background manager or without a session', async () => {
      expect(failureMessage(await run({ command: 'true', async: true }))).toBe('async shell commands are not available on this server');
      const tool = shell({ background: new BackgroundTaskManager() });
      expect(failureMessage(await tool.execute('{"command":"true","async":true}', workspace))).toBe('async shell commands need a session');
    });
  });

  it.each([
    [{ command: '' }, "'command' must not be empty"],
    [{ command: 'true', timeout_ms: 0 }, "'timeout_ms' must be at least 1, got 0"],
    [{ command: 'true', async: 'yes' }, "'async' must be a boolean, got string"],
  ])('%j → error', async (args, error) => {
    expect(failureMessage(await run(args))).toBe(error);
  });

  describe('environment', () => {
    const envOf = async (tool = shell()) => {
      const { stdout } = successJson(await run({ command: 'env' }, tool));
      return Object.fromEntries(
        String(stdout)
          .split('\n')
          .filter(Boolean)
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
    };

    it('keeps only PATH, LANG, LC_ALL and TZ of the server', () => {
      const server = { PATH: '/opt/bin:/usr/bin', LANG: 'C.UTF-8', LC_ALL: 'C', TZ: 'UTC', HOME: '/root', TMPDIR: '/var/tmp', USER: 'srv' };
      expect(shellEnvironment(server)).toEqual({ PATH: '/opt/bin:/usr/bin', LANG: 'C.UTF-8', LC_ALL: 'C', TZ: 'UTC' });
    });

    it('leaves out the server secrets and anything not allowed, whatever their names', () => {
      const server = { PATH: '/usr/bin', HARNESS_TOKENS: 'tok=1', LLM_API_KEY: 'sk', DATABASE_URL: 'postgres://u:p@h/db', AWS_ACCESS_KEY_ID: 'A' };
      expect(shellEnvironment(server)).toEqual({ PATH: '/usr/bin' });
    });

    it('uses a default PATH when the server has none', () => {
      expect(shellEnvironment({})).toEqual({ PATH: DEFAULT_SHELL_PATH });
      expect(shellEnvironment({ PATH: '' })).toEqual({ PATH: DEFAULT_SHELL_PATH });
    });

    it('copies the variables named in HARNESS_SHELL_ENV that the server has', () => {
      const server = { PATH: '/usr/bin', GOPATH: '/go', NPM_CONFIG_CACHE: '/cache', SECRET: 's' };
      expect(shellEnvironment(server, ['GOPATH', 'NPM_CONFIG_CACHE', 'MISSING'])).toEqual({ PATH: '/usr/bin', GOPATH: '/go', NPM_CONFIG_CACHE: '/cache' });
    });

    it('is what commands see by default, not the server environment', async () => {
      const marker = 'HARNESS_TEST_SHELL_MARKER';
      process.env[marker] = 'leaked';
      try {
        const env = await envOf();
        expect(env[marker]).toBeUndefined();
        expect(env).toEqual(
          expect.objectContaining({ PATH: process.env.PATH, HOME: workspace, TERM: 'dumb', HARNESS_SESSION_ID: '5', HARNESS_USER_ID: '9' }),
        );
        const allowed = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'HOME', 'TERM', 'HARNESS_SESSION_ID', 'HARNESS_USER_ID', 'PWD', 'OLDPWD', 'SHLVL', '_'];
        expect(Object.keys(env).filter((name) => !allowed.includes(name))).toEqual([]);
      } finally {
        delete process.env[marker];
      }
    });

    it('sets HOME, TERM and the ids itself, over what the configured environment holds', async () => {
      const env = await envOf(shell({ env: { PATH: process.env.PATH, HOME: '/root', TERM: 'xterm', HARNESS_SESSION_ID: '77', EXTRA: 'x' } }));
      expect(env).toEqual(expect.objectContaining({ HOME: workspace, TERM: 'dumb', HARNESS_SESSION_ID: '5', HARNESS_USER_ID: '9', EXTRA: 'x' }));
    });

    it('has no TMPDIR unless it is passed on purpose', async () => {
      expect((await envOf(shell({ env: shellEnvironment({ PATH: process.env.PATH, TMPDIR: '/var/tmp' }) }))).TMPDIR).toBeUndefined();
      const passed = shellEnvironment({ PATH: process.env.PATH, TMPDIR: '/var/tmp' }, ['TMPDIR']);
      expect((await envOf(shell({ env: passed }))).TMPDIR).toBe('/var/tmp');
    });
  });

  it('refuses a workspace that does not exist', async () => {
    expect(failureMessage(await shell().execute('{"command":"true"}', SESSION, USER, path.join(workspace, 'gone')))).toBe('the session workspace does not exist');
  });
});

/** Pids of live host processes with `arg` among their arguments (a zombie has none). */
function processesWith(arg: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(arg)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

// Two ways of confining: a server that is not root makes its namespaces inside a user namespace;
// a root server makes them directly and runs each command as `nobody`. Root can try both.
const asRoot = process.geteuid?.() === 0;
const variants: Array<[string, Pick<ShellIsolationOptions, 'runsAsRoot'>]> = [['in a user namespace (server not root)', { runsAsRoot: false }]];
if (asRoot) variants.push(['as nobody (server is root)', { runsAsRoot: true }]);

describe.each(variants)('ShellTool with namespace isolation, %s', (_, variant) => {
  // Chosen once, when the file loads: the confinement tests need a host where unshare can create
  // these namespaces (for a server that is not root: unprivileged user namespaces, no seccomp filter).
  const namespaces = probeNamespaceIsolationSync(undefined, variant.runsAsRoot);
  const requireNamespaces = process.env.HARNESS_TEST_REQUIRE_NAMESPACES === '1';
  const whereNamespacesWork = namespaces.ok || requireNamespaces ? it : it.skip;
  if (!namespaces.ok && !requireNamespaces) {
    it.skip(`(skipped: namespaces unavailable here: ${namespaces.error}; HARNESS_TEST_REQUIRE_NAMESPACES=1 makes this a failure)`, () => undefined);
  }

  let scratch: string;
  let root: string;
  let dbDir: string;
  let workspace: string;

  beforeEach(async () => {
    scratch = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'harness-confined-')));
    // As a deployment's data directory is: a root server's commands run as `nobody`, who must be
    // able to pass through it to reach the workspace by its absolute path.
    await fs.chmod(scratch, 0o755);
    root = path.join(scratch, 'workspaces');
    dbDir = path.join(scratch, 'data');
    workspace = path.join(root, `user-${USER}`, 'project');
    await fs.mkdir(workspace, { recursive: true });
    await fs.writeFile(path.join(workspace, 'mine.txt'), 'mine\n');
    await fs.mkdir(path.join(root, 'user-2', 'theirs'), { recursive: true });
    await fs.writeFile(path.join(root, 'user-2', 'theirs', 'secret.txt'), 'sibling secret\n');
    await fs.mkdir(dbDir);
    await fs.writeFile(path.join(dbDir, 'harness.db'), 'every message\n');
  });

  afterEach(async () => {
    await fs.rm(scratch, { recursive: true, force: true });
  });

  const isolation = (mode: 'namespace' | 'auto' = 'namespace', options: { unshare?: string; warn?: (line: string) => void } = {}) =>
    new ShellIsolation({ mode, hiddenPaths: [root, dbDir], ...variant, ...options });
  const confined = (options: Partial<ShellToolOptions> = {}) => new ShellTool({ enabled: true, isolation: isolation(), ...options });
  const run = async (args: Record<string, unknown>, tool = confined(), dir = workspace) => tool.execute(JSON.stringify(args), SESSION, USER, dir);

  whereNamespacesWork('runs in the workspace at its own path, reading and writing its files', async () => {
    expect(successJson(await run({ command: 'pwd; cat mine.txt; echo new > made.txt; echo "$HOME"' }))).toEqual({
      exit_code: 0,
      stdout: `${workspace}\nmine\n${workspace}\n`,
      stderr: '',
    });
    expect(await fs.readFile(path.join(workspace, 'made.txt'), 'utf8')).toBe('new\n');
  });

  whereNamespacesWork('does not show the server environment through /proc', async () => {
    // The server stand-in: a process whose initial environment holds the marker, starting the
    // launch the tool would start, as the server does.
    const marker = `harness-marker-${process.pid}-${Date.now()}`;
    const command = 'cat /proc/$PPID/environ; for f in /proc/[0-9]*/environ; do cat "$f"; done 2>/dev/null; echo; ls /proc | grep -c "^[0-9]"';
    const starter = [
      "const { spawn } = require('node:child_process');",
      'const [file, args, cwd] = JSON.parse(process.argv[1]);',
      "const child = spawn(file, args, { cwd, env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'ignore', 'pipe'] });",
      'child.stdout.pipe(process.stdout);',
    ].join('\n');
    const throughServer = async (mode: 'namespace' | 'none') => {
      const launch = await new ShellIsolation({ mode, hiddenPaths: [root, dbDir], ...variant }).launchFor(command, workspace);
      const server = spawnSync(process.execPath, ['-e', starter, JSON.stringify([launch.file, launch.args, workspace])], {
        env: { PATH: process.env.PATH, HARNESS_TEST_MARKER: marker },
        encoding: 'utf8',
      });
      return server.stdout;
    };
    expect(await throughServer('none')).toContain(marker); // the leak the isolation closes
    const output = await throughServer('namespace');
    expect(output).not.toContain(marker);
    expect(Number(output.trim().split('\n').pop())).toBeLessThan(5); // its own few processes only
  });

  whereNamespacesWork('shows only its own workspace under the workspace root, and no database', async () => {
    const result = successJson(await run({ command: `ls -A ${root}; echo --; ls -A ${root}/user-${USER}; echo --; ls -A ${dbDir}` }));
    expect(result).toEqual({ exit_code: 0, stdout: `user-${USER}\n--\nproject\n--\n`, stderr: '' });
  });

  whereNamespacesWork('hides a database directory that holds the workspace root (the default layout), keeping the workspace', async () => {
    // HARNESS_DB=./data/harness.db with HARNESS_WORKSPACE_ROOT=./data/workspaces
    await fs.writeFile(path.join(scratch, 'harness.db'), 'every message\n');
    const tool = confined({ isolation: new ShellIsolation({ mode: 'namespace', hiddenPaths: [root, scratch], ...variant }) });
    const result = successJson(await run({ command: `cat mine.txt; ls -A ${scratch} ${root}` }, tool));
    expect(result).toEqual({ exit_code: 0, stdout: `mine\n${scratch}:\nworkspaces\n\n${root}:\nuser-${USER}\n`, stderr: '' });
  });

  whereNamespacesWork('hides a single file (a database kept in a directory commands need) behind /dev/null', async () => {
    const dbFile = path.join(scratch, 'loose.db');
    await fs.writeFile(dbFile, 'every message\n');
    const tool = confined({ isolation: new ShellIsolation({ mode: 'namespace', hiddenPaths: [root, dbFile, `${dbFile}-wal`], ...variant }) });
    const result = successJson(await run({ command: `cat ${dbFile}; echo "[$?]"; echo overwrite > ${dbFile}; cat mine.txt` }, tool));
    expect(result).toEqual({ exit_code: 0, stdout: '[0]\nmine\n', stderr: '' });
    expect(await fs.readFile(dbFile, 'utf8')).toBe('every message\n');
  });

  whereNamespacesWork("cannot read a sibling user's files or the database file", async () => {
    const sibling = path.join(root, 'user-2', 'theirs', 'secret.txt');
    const result = failureJson(await run({ command: `cat ../../user-2/theirs/secret.txt; cat ${sibling}; cat ${dbDir}/harness.db` }));
    expect(result.exit_code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/No such file or directory/);
  });

  whereNamespacesWork('cannot unmount what hides the other directories', async () => {
    const result = successJson(await run({ command: `cd /; umount -l -i -n ${workspace}; umount -l -i -n ${root}; umount -l -i -n ${dbDir}; ls -A ${root} ${dbDir}` }));
    expect(result.stdout).toBe(`${dbDir}:\n\n${root}:\nuser-${USER}\n`);
  });

  whereNamespacesWork('keeps exit codes, signals and output capping', async () => {
    expect(failureJson(await run({ command: 'echo oops >&2; exit 3' }))).toEqual({ exit_code: 3, stdout: '', stderr: 'oops\n' });
    expect(failureJson(await run({ command: 'kill -TERM $$' })).exit_code).toBe(128 + os.constants.signals.SIGTERM);
    const capped = successJson(await run({ command: "head -c 5000 /dev/zero | tr '\\0' a" }, confined({ maxOutputBytes: 100 })));
    expect(capped).toEqual({ exit_code: 0, stdout: `${'a'.repeat(100)}\n[output truncated: 4900 more bytes]`, stderr: '', truncated: true });
  });

  whereNamespacesWork('on timeout kills everything the command started, even outside its process group', async () => {
    const [inGroup, ownSession] = [sleepArg(), sleepArg()];
    const result = failureJson(await run({ command: `sleep ${inGroup} & setsid sleep ${ownSession} & wait`, timeout_ms: 1000 }));
    expect(result).toEqual({ exit_code: 124, stdout: '', stderr: '', timed_out: true });
    await eventually(() => (processesWith(inGroup).length + processesWith(ownSession).length === 0 ? true : undefined), 'the sleeps to die');
  });

  whereNamespacesWork("when the call's signal fires, kills everything in the namespace within a second, even outside the group", async () => {
    const [child, ownSession, jobControlled, foreground] = [sleepArg(), sleepArg(), sleepArg(), sleepArg()];
    const command = `sleep ${child} & setsid sleep ${ownSession} & (set -m; sleep ${jobControlled} &); sleep ${foreground}; touch done`;
    const start = (signal: AbortSignal) => inCall(signal, () => run({ command }));
    const { answer, pids } = await cancelWhileRunning(start, command, [child, ownSession, jobControlled, foreground]);
    expect(failureMessage(answer)).toBe('the command was cancelled before it finished; it was killed');
    // The sleeps, unshare, the namespace's init and the command's shell.
    expect(pids.length).toBeGreaterThanOrEqual(7);
    await within(1000, () => pids.every((pid) => !isRunning(pid)), 'the death of every process');
    await expect(fs.access(path.join(workspace, 'done'))).rejects.toThrow();
  });

  whereNamespacesWork('ends what the command leaves running in the background when it returns', async () => {
    const arg = sleepArg();
    expect(successJson(await run({ command: `setsid sleep ${arg} > /dev/null 2>&1 & echo started` }))).toEqual({ exit_code: 0, stdout: 'started\n', stderr: '' });
    await eventually(() => (processesWith(arg).length === 0 ? true : undefined), 'the background sleep to die');
  });

  whereNamespacesWork('runs async:true commands confined too', async () => {
    const background = new BackgroundTaskManager();
    const started = successJson(await run({ command: `ls -A ${root}`, async: true }, confined({ background })));
    expect(started.status).toBe('started');
    const [finished] = await eventually<BackgroundTaskResult[]>(() => {
      const drained = background.drainCompleted(SESSION);
      return drained.length > 0 ? drained : undefined;
    }, 'the background result');
    expect(JSON.parse(finished.result)).toEqual({ exit_code: 0, stdout: `user-${USER}\n`, stderr: '' });
  });

  if (variant.runsAsRoot) whereNamespacesWork('on a root server, runs as nobody, without the power of root over the host', async () => {
    await fs.writeFile(path.join(workspace, 'by-server.txt'), 'written by the server\n');
    const command = [
      'id -u; id -g; id -G',
      'cat /proc/sys/kernel/core_pattern > /dev/null && (cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern) 2>/dev/null || echo "sysctl:refused"',
      'cat /etc/shadow > /dev/null 2>&1 || echo "shadow:refused"',
      'echo more >> by-server.txt && echo "workspace:writable"',
      'grep -c CapEff:.0000000000000000 /proc/self/status; grep NoNewPrivs /proc/self/status',
    ].join('; ');
    const result = successJson(await run({ command }));
    expect(result).toEqual({
      exit_code: 0,
      stdout: '65534\n65534\n65534\nsysctl:refused\nshadow:refused\nworkspace:writable\n1\nNoNewPrivs:\t1\n',
      stderr: '',
    });
  });

  whereNamespacesWork('finds its own programs in system directories, never in the workspace', async () => {
    // A workspace full of impostors that would report `ready` without confining anything.
    for (const name of ['unshare', 'mount', 'mkdir', 'chown', 'setpriv']) {
      await fs.writeFile(path.join(workspace, name), '#!/bin/sh\necho ready >&3\nexec /bin/sh -c "$(eval echo \\${$#})"\n', { mode: 0o755 });
    }
    const serverPath = process.env.PATH;
    process.env.PATH = `.::${serverPath}`;
    try {
      const tool = confined({ isolation: isolation(), env: { PATH: `.::${serverPath}` } });
      expect(successJson(await run({ command: `ls -A ${root}` }, tool))).toEqual({ exit_code: 0, stdout: `user-${USER}\n`, stderr: '' });
    } finally {
      process.env.PATH = serverPath;
    }
  });

  whereNamespacesWork('treats quotes and substitutions in the workspace path and the command as plain text', async () => {
    const name = `ws'$(touch pwned1)'"$(touch pwned2)"\`touch pwned3\`;touch pwned4;'`;
    const odd = path.join(root, `user-${USER}`, name);
    await fs.mkdir(odd);
    const result = successJson(await run({ command: `pwd; printf '%s\\n' "it's" '$(touch pwned5)'` }, confined(), odd));
    expect(result).toEqual({ exit_code: 0, stdout: `${odd}\nit's\n$(touch pwned5)\n`, stderr: '' });
    for (const dir of [odd, path.dirname(odd), workspace, root, scratch, process.cwd()]) {
      expect((await fs.readdir(dir)).filter((entry) => entry.startsWith('pwned'))).toEqual([]);
    }
  });

  whereNamespacesWork('with auto, confines commands on a host where namespaces work', async () => {
    const warn = jest.fn();
    const tool = confined({ isolation: isolation('auto', { warn }) });
    expect(successJson(await run({ command: `ls -A ${root}` }, tool)).stdout).toBe(`user-${USER}\n`);
    expect(warn).not.toHaveBeenCalled();
  });

  describe('where namespaces cannot be created', () => {
    let unshare: string;

    beforeEach(async () => {
      unshare = path.join(scratch, 'unshare');
      await fs.writeFile(unshare, '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n', { mode: 0o755 });
    });

    it('with namespace, answers an error and runs nothing', async () => {
      const tool = confined({ isolation: isolation('namespace', { unshare }) });
      expect(failureMessage(await run({ command: 'touch ran' }, tool))).toBe(
        'the command was not run: its isolation could not be set up (unshare: unshare failed: Operation not permitted)',
      );
      await expect(fs.access(path.join(workspace, 'ran'))).rejects.toThrow();
    });

    it('with namespace, answers an error when unshare is missing', async () => {
      const tool = confined({ isolation: isolation('namespace', { unshare: path.join(scratch, 'no-unshare') }) });
      expect(failureMessage(await run({ command: 'true' }, tool))).toMatch(/^could not start .*no-unshare: .*ENOENT/);
    });

    it('with auto, runs commands unconfined and warns once', async () => {
      const warn = jest.fn();
      const tool = confined({ isolation: isolation('auto', { unshare, warn }) });
      expect(successJson(await run({ command: 'touch ran; ls ../..' }, tool))).toEqual({ exit_code: 0, stdout: 'user-2\nuser-9\n', stderr: '' });
      await run({ command: 'true' }, tool);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('shell commands are NOT isolated'));
      expect(warn.mock.calls[0][0]).toContain('Operation not permitted');
    });

    it('reports the problem at check(), before any command', async () => {
      const warn = jest.fn();
      expect(await isolation('namespace', { unshare, warn }).check()).toEqual({ ok: false, error: 'unshare: unshare failed: Operation not permitted' });
      expect(warn).toHaveBeenCalledWith(expect.stringContaining('HARNESS_SHELL_ISOLATION=namespace but namespaces are unavailable'));
      expect(await new ShellIsolation({ mode: 'none', unshare, warn, ...variant }).check()).toEqual({ ok: true });
      expect(warn).toHaveBeenCalledTimes(1);
    });
  });
});
