import { spawn } from 'node:child_process';
import type { ToolCapabilities } from '../tool';
import { constants as osConstants } from 'node:os';
import type { Readable } from 'node:stream';

import type { BackgroundTaskManager } from '../../runtime/background-task-manager';
import { BaseTool } from '../tool';
import { ToolCallContext } from '../tool-call-context';
import { optionalBoolean, optionalInteger, parseToolArguments, requireString } from '../tool-arguments';
import { resolveInWorkspace } from '../workspace-path';
import { toolOutput, type ToolOutput } from '../tool-output';
import { errorMessage } from '../../runtime/error-message';
import { errorResult, jsonResult, resultText, textResult } from './json-result';
import { shellEnvironment } from './shell-environment';
import { ShellIsolation, type ShellLaunch } from './shell-isolation';

/** The exact error every call gets while the shell is switched off. */
export const SHELL_DISABLED_ERROR = 'shell is disabled on this server (HARNESS_CLOUD_SHELL=off)';

/** Exit code reported for a command killed by the timeout (the one coreutils `timeout` uses). */
export const SHELL_TIMEOUT_EXIT_CODE = 124;

/** What a call whose signal fired before the command started answers. */
export const SHELL_NOT_STARTED_ERROR = 'the command was cancelled before it started; nothing was run';

/** How long output is still awaited after the shell exits, for its last buffered bytes. */
const EXIT_OUTPUT_GRACE_MS = 1000;

/** Options of `ShellTool`. */
export interface ShellToolOptions {
  /** `false` makes every call answer `SHELL_DISABLED_ERROR`. */
  enabled: boolean;
  /** Timeout of a command that gives no `timeout_ms` (default 120 000 ms). */
  timeoutMs?: number;
  /** Upper bound of `timeout_ms` a model may ask for (default 600 000 ms). */
  maxTimeoutMs?: number;
  /** Bytes kept of each of stdout and stderr (default 100 KiB); the rest is dropped and noted. */
  maxOutputBytes?: number;
  /** Runs `async:true` commands; without it such calls get an error. */
  background?: BackgroundTaskManager;
  /**
   * Environment the commands start from (default: `shellEnvironment(process.env)`, an allow-list).
   * Each call sets `HOME` (the session workspace), `TERM=dumb` and the session and user ids on top.
   */
  env?: NodeJS.ProcessEnv;
  /**
   * How commands are confined (default: `none`, plain `/bin/sh` as the server's user; the server
   * passes the one `HARNESS_SHELL_ISOLATION` chose).
   */
  isolation?: ShellIsolation;
}

/** What a finished command reports. */
export interface ShellResult {
  exit_code: number;
  stdout: string;
  stderr: string;
  timed_out?: true;
  truncated?: true;
}

/**
 * `shell {command, timeout_ms?, async?}`: runs `/bin/sh -c command` in the session workspace.
 * The command's environment is the configured allow-list (`shellEnvironment`) plus `HOME` = the
 * workspace, `TERM=dumb` and `HARNESS_SESSION_ID` / `HARNESS_USER_ID`. It runs in its
 * own process group so that a timeout kills everything it started. Result:
 * `{"exit_code","stdout","stderr","timed_out"?,"truncated"?}`; a timeout gives exit code 124 and
 * `timed_out:true`, a signal 128+N. The call states its outcome: a non-zero exit code (a timeout
 * included) is a failed call (`isError`), with the same text and a short `errorMessage`. With
 * `async:true` the command is handed to the `BackgroundTaskManager` and the call answers
 * `{"status":"started","task_id"}` at once, a success: the command's own outcome arrives later,
 * as text.
 *
 * When the call's signal (`ToolCallContext.signal()`) fires, the command is killed the way a
 * timeout kills it and the call answers `{"error":"the command was cancelled …"}` at once; a call
 * whose signal has already fired runs nothing. Unconfined, "everything it started" means its
 * process group: a process that leaves the group (`setsid`, a `set -m` job, a daemon) survives.
 * An `async:true` command belongs to the session, not to the call: the signal of the call that
 * started it does not stop it (its own `timeout_ms` does, and so does the server stopping).
 *
 * With namespace isolation (`ShellIsolation`) the command runs in its own pid and mount
 * namespaces (and as `nobody` when the server is root): it sees only its own processes, and of the workspace root and database directory
 * only its session's workspace. Processes it leaves running end with it. A command whose
 * isolation cannot be set up is not run; the call answers `{"error": ...}`.
 */
export class ShellTool extends BaseTool {
  private readonly timeoutMs: number;
  private readonly maxTimeoutMs: number;
  private readonly maxOutputBytes: number;
  private readonly isolation: ShellIsolation;

  constructor(private readonly options: ShellToolOptions) {
    super();
    this.isolation = options.isolation ?? new ShellIsolation({ mode: 'none' });
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.maxTimeoutMs = Math.max(options.maxTimeoutMs ?? 600_000, this.timeoutMs);
    this.maxOutputBytes = options.maxOutputBytes ?? 100 * 1024;
  }

  getName(): string {
    return 'shell';
  }

  protected override capabilities(): ToolCapabilities {
    return { title: 'Run a shell command', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }, runsCommands: true };
  }

  getDescription(): string {
    return (
      'Run a command with /bin/sh in the workspace directory and return its exit code, stdout and stderr. ' +
      `Commands time out after ${this.timeoutMs} ms unless timeout_ms is given; output beyond ` +
      `${this.maxOutputBytes} bytes per stream is cut. Set async to true for long-running commands: ` +
      'the call returns a task id at once and the result arrives later in the conversation.'
    );
  }

  getInputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The command line, run by /bin/sh -c in the workspace directory.' },
        timeout_ms: {
          type: 'integer',
          minimum: 1,
          maximum: this.maxTimeoutMs,
          description: `Kill the command after this many milliseconds. Default ${this.timeoutMs}.`,
        },
        async: { type: 'boolean', description: 'Run in the background and deliver the result later. Default false.' },
      },
      required: ['command'],
      additionalProperties: false,
    };
  }

  override getOutputSchema(): Record<string, unknown> {
    return {
      type: 'object',
      properties: {
        exit_code: { type: 'integer', description: 'Exit status; 124 after a timeout, 128+N after signal N.' },
        stdout: { type: 'string' },
        stderr: { type: 'string' },
        timed_out: { type: 'boolean', description: 'Present and true when the command was killed by the timeout.' },
        truncated: { type: 'boolean', description: 'Present and true when output was cut.' },
        status: { type: 'string', description: '"started" for an async call.' },
        task_id: { type: 'string', description: 'Background task id of an async call.' },
      },
    };
  }

  protected override async executeWithUser(
    argumentsJson: string,
    sessionId: number | null,
    userId: number | null,
    workspace: string | null,
  ): Promise<ToolOutput> {
    try {
      return await this.runCommand(argumentsJson, sessionId, userId, workspace);
    } catch (error) {
      return errorResult(`shell failed: ${errorMessage(error)}`);
    }
  }

  protected override executeWithSession(argumentsJson: string, sessionId: number | null, workspace: string | null): Promise<ToolOutput> {
    return this.executeWithUser(argumentsJson, sessionId, null, workspace);
  }

  protected override executeWithWorkspace(argumentsJson: string, workspace: string | null): Promise<ToolOutput> {
    return this.executeWithUser(argumentsJson, null, null, workspace);
  }

  protected override executeImpl(argumentsJson: string): Promise<ToolOutput> {
    return this.executeWithUser(argumentsJson, null, null, null);
  }

  private async runCommand(
    argumentsJson: string,
    sessionId: number | null,
    userId: number | null,
    workspace: string | null,
  ): Promise<ToolOutput> {
    if (!this.options.enabled) return errorResult(SHELL_DISABLED_ERROR);
    const signal = ToolCallContext.signal();
    if (signal?.aborted) return errorResult(SHELL_NOT_STARTED_ERROR);
    if (workspace === null || workspace.trim() === '') return errorResult('shell needs a workspace to run');
    const parsed = parseToolArguments(argumentsJson);
    if (!parsed.ok) return errorResult(parsed.error);
    const command = requireString(parsed.args, 'command');
    if (!command.ok) return errorResult(command.error);
    const timeout = optionalInteger(parsed.args, 'timeout_ms', { min: 1 });
    if (!timeout.ok) return errorResult(timeout.error);
    if (timeout.value !== undefined && timeout.value > this.maxTimeoutMs) {
      return errorResult(`'timeout_ms' must be at most ${this.maxTimeoutMs}, got ${timeout.value}`);
    }
    const runAsync = optionalBoolean(parsed.args, 'async');
    if (!runAsync.ok) return errorResult(runAsync.error);

    const root = resolveInWorkspace(workspace, '.');
    if (!root.ok) return errorResult(root.error);

    const env: NodeJS.ProcessEnv = { ...(this.options.env ?? shellEnvironment(process.env)), HOME: root.path, TERM: 'dumb' };
    delete env.HARNESS_SESSION_ID;
    delete env.HARNESS_USER_ID;
    if (sessionId !== null) env.HARNESS_SESSION_ID = String(sessionId);
    if (userId !== null) env.HARNESS_USER_ID = String(userId);
    const launch = await this.isolation.launchFor(command.value, root.path);
    // The checks above took time (the isolation probe may have run): the call may be over.
    if (signal?.aborted) return errorResult(SHELL_NOT_STARTED_ERROR);
    const run = (stop?: AbortSignal) => this.spawnCommand(launch, root.path, env, timeout.value ?? this.timeoutMs, stop);

    if (!runAsync.value) return run(signal);
    const background = this.options.background;
    if (!background) return errorResult('async shell commands are not available on this server');
    if (sessionId === null) return errorResult('async shell commands need a session');
    // A background job outlives the call that started it, so the call's signal does not reach it.
    // Background results reach the model later as text; the manager keeps only that.
    // Its own stop: the server stopping kills it (`BackgroundTaskManager.stopAll`).
    const stop = new AbortController();
    const taskId = background.start(sessionId, `shell: ${command.value}`, run(stop.signal).then(resultText), stop);
    return jsonResult({
      status: 'started',
      task_id: taskId,
      message: 'The command runs in the background; its result arrives with a later round.',
    });
  }

  /**
   * Never rejects: a spawn failure becomes an error result. The timeout and `stop` end the
   * command the same way, by killing its process group (`killGroup`); `stop` then answers at once,
   * without waiting for output a process that escaped the group may still hold open.
   */
  private spawnCommand(launch: ShellLaunch, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number, stop?: AbortSignal): Promise<ToolOutput> {
    return new Promise((resolve) => {
      const child = spawn(launch.file, launch.args, {
        cwd,
        env,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe', launch.confined ? 'pipe' : 'ignore'],
      });
      const [stdoutStream, stderrStream] = [child.stdout as Readable, child.stderr as Readable];
      const stdout = new CappedOutput(this.maxOutputBytes);
      const stderr = new CappedOutput(this.maxOutputBytes);
      stdoutStream.on('data', (chunk: Buffer) => stdout.add(chunk));
      stderrStream.on('data', (chunk: Buffer) => stderr.add(chunk));
      // A confined launch says on descriptor 3 that its namespaces are in place; without that
      // word the command never started.
      const status = child.stdio[3] as Readable | null;
      let ready = !launch.confined;
      status?.on('data', () => (ready = true));

      let stoppedBy: 'timeout' | 'signal' | null = null;
      const timer = setTimeout(() => {
        stoppedBy ??= 'timeout';
        killGroup(child.pid);
      }, timeoutMs);
      timer.unref();
      let exited = false;
      const cancel = (): void => {
        // A shell that has already exited is reported as it ended; what it left in its group goes.
        if (!exited) stoppedBy ??= 'signal';
        clearTimeout(timer);
        killGroup(child.pid);
        stdoutStream.destroy();
        stderrStream.destroy();
        status?.destroy();
      };
      stop?.addEventListener('abort', cancel, { once: true });
      const settle = (result: ToolOutput): void => {
        clearTimeout(timer);
        stop?.removeEventListener('abort', cancel);
        resolve(result);
      };

      // A command that leaves a background job holding its stdout/stderr (`server &`) would keep
      // 'close' from firing; once the shell itself has exited, stop waiting for that output.
      child.on('exit', () => {
        exited = true;
        const grace = setTimeout(() => {
          stdoutStream.destroy();
          stderrStream.destroy();
          status?.destroy();
        }, EXIT_OUTPUT_GRACE_MS);
        grace.unref();
        child.on('close', () => clearTimeout(grace));
      });
      child.on('error', (error) => settle(errorResult(`could not start ${launch.file}: ${errorMessage(error)}`)));
      child.on('close', (code, signal) => {
        if (stoppedBy === 'signal') return settle(errorResult(cancelledError(stop)));
        const timedOut = stoppedBy === 'timeout';
        if (!ready && !timedOut) return settle(errorResult(this.isolation.setupError(stderr.text())));
        const result: ShellResult = {
          exit_code: timedOut ? SHELL_TIMEOUT_EXIT_CODE : exitCode(code, signal),
          stdout: stdout.text(),
          stderr: stderr.text(),
        };
        if (timedOut) result.timed_out = true;
        if (stdout.truncated || stderr.truncated) result.truncated = true;
        const reason = timedOut
          ? `the command did not finish within ${timeoutMs} ms; it was killed`
          : code === null && signal !== null
            ? `the command was killed by ${signal}`
            : `the command exited with code ${result.exit_code}`;
        settle(commandResult(result, reason));
      });
    });
  }
}

/**
 * A finished command's report, its text as it always was. A non-zero exit code (a timeout's 124
 * too) is a failed call, with `failure` as its short reason: the text may be long, the reason
 * is what activities and clients show.
 */
function commandResult(result: ShellResult, failure: string): ToolOutput {
  const text = JSON.stringify(result);
  return result.exit_code === 0 ? textResult(text) : toolOutput([{ type: 'text', text }], { isError: true, errorMessage: failure });
}

function exitCode(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const number = signal ? osConstants.signals[signal] : undefined;
  return number ? 128 + number : 1;
}

/** What a call answers when its signal stopped the running command. */
function cancelledError(stop: AbortSignal | undefined): string {
  const reason = stop?.reason as { name?: unknown } | undefined;
  return reason?.name === 'TimeoutError'
    ? "the command was cancelled: the call's time limit passed; it was killed"
    : 'the command was cancelled before it finished; it was killed';
}

/**
 * Kills the command's process group: the shell and what it started without leaving the group
 * (`cmd &`, `nohup cmd &`; a non-interactive shell has no job control). A confined launch's group
 * holds `unshare` and the pid namespace's init (the prelude), and when init dies the kernel kills
 * every other process in the namespace, whatever group or session it moved to (`unshare
 * --kill-child` does the same should only `unshare` die). Unconfined, a process that left the
 * group (`setsid`, a job under `set -m`, a daemon) is not reached.
 */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // the group is already gone
  }
}

/** Keeps the first `maxBytes` of a stream and counts the rest. */
class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;

  constructor(private readonly maxBytes: number) {}

  get truncated(): boolean {
    return this.dropped > 0;
  }

  add(chunk: Buffer): void {
    const room = this.maxBytes - this.kept;
    if (room >= chunk.length) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
      return;
    }
    if (room > 0) {
      this.chunks.push(chunk.subarray(0, room));
      this.kept += room;
    }
    this.dropped += chunk.length - Math.max(room, 0);
  }

  text(): string {
    const text = Buffer.concat(this.chunks).toString('utf8');
    return this.dropped > 0 ? `${text}\n[output truncated: ${this.dropped} more bytes]` : text;
  }
}
