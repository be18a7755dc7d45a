import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { messageOf } from './json-result';
import { DEFAULT_SHELL_PATH } from './shell-environment';

/** `HARNESS_SHELL_ISOLATION`: how `shell` commands are confined. */
export type ShellIsolationMode = 'auto' | 'namespace' | 'none';

export const SHELL_ISOLATION_MODES: readonly ShellIsolationMode[] = ['auto', 'namespace', 'none'];

/** What a confined launch writes to file descriptor 3 once the confinement is in place. */
const READY = 'ready';

/** How long the probe may take before it counts as failed. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * Run by `/bin/sh` inside the new user, pid and mount namespaces (where it is pid 1) with
 * `$1` = the workspace, `$2` = the command, `$3…` = the directories to hide. Nothing it is given
 * becomes shell source: every value is a positional parameter, always quoted.
 *
 * It enters the workspace first, so its working directory keeps the real workspace after an
 * empty tmpfs is mounted over each hidden directory; then it recreates the workspace path and
 * binds that directory back there (`--no-canonicalize` keeps `.` from being resolved to the now
 * empty path), re-enters it through the new mount so that `..` leads into the empty tmpfs, and
 * hides again any hidden directory that lies inside the workspace. Any failure ends it before
 * the command is reached.
 *
 * The command then runs in one more user and mount namespace: mounts copied into a namespace
 * owned by a less privileged user namespace are locked, so the command cannot unmount the tmpfs
 * layers to look beneath them. The innermost shell reports `ready` on descriptor 3 and closes it
 * before running the command. The prelude stays pid 1 and exits with the command's status; when
 * it exits, everything still running in the namespace is killed.
 */
export const NAMESPACE_PRELUDE = [
  'set -e',
  'workspace=$1',
  'command=$2',
  'shift 2',
  'cd "$workspace"',
  'for dir do',
  '  if [ -d "$dir" ]; then mount -t tmpfs -o mode=0755,size=64k harness-hidden "$dir"; fi',
  'done',
  'mkdir -p "$workspace"',
  'mount --no-canonicalize --bind . "$workspace"',
  'cd "$workspace"',
  'for dir do',
  '  case $dir in',
  '    "$workspace"/*) if [ -d "$dir" ]; then mount -t tmpfs -o mode=0755,size=64k harness-hidden "$dir"; fi ;;',
  '  esac',
  'done',
  'set +e',
  `unshare --user --map-root-user --mount -- /bin/sh -c 'echo ${READY} >&3 && exec 3>&- && exec /bin/sh -c "$1"' harness-shell "$command"`,
  'exit $?',
].join('\n');

/** How one command is started. */
export interface ShellLaunch {
  file: string;
  args: string[];
  /**
   * True for a namespace launch: it reports on descriptor 3 once the confinement is in place,
   * and a launch that never does so has not run the command.
   */
  confined: boolean;
}

/** Outcome of checking whether namespace confinement works on this host. */
export type ShellIsolationProbe = { ok: true } | { ok: false; error: string };

/** Options of `ShellIsolation`. */
export interface ShellIsolationOptions {
  mode: ShellIsolationMode;
  /**
   * Directories confined commands must not see (the workspace root, the database directory):
   * each is covered by an empty tmpfs, and only the session's own workspace is bound back.
   * Absolute paths; a directory that does not exist is skipped.
   */
  hiddenDirs?: readonly string[];
  /** The `unshare` program (default `unshare`, looked up on `PATH`). */
  unshare?: string;
  /** Receives the one warning line about missing confinement (default: stderr). */
  warn?: (line: string) => void;
}

/**
 * Decides how `shell` commands are started.
 *
 * - `namespace`: every command runs through `unshare` in new user, pid and mount namespaces
 *   with a fresh `/proc` (the server's and other sessions' processes are invisible), the hidden
 *   directories covered by empty tmpfs mounts and only the session's workspace bound back at
 *   its own path. A command whose confinement cannot be set up is not run.
 * - `auto`: checks once (at `check()` or the first command) whether that works on this host; uses it if so, else runs
 *   commands unconfined and writes one warning line.
 * - `none`: `/bin/sh -c command` as the server's user.
 */
export class ShellIsolation {
  private probe?: Promise<ShellIsolationProbe>;
  private readonly unshare: string;
  private readonly hiddenDirs: readonly string[];

  constructor(private readonly options: ShellIsolationOptions) {
    this.unshare = options.unshare ?? 'unshare';
    this.hiddenDirs = options.hiddenDirs ?? [];
  }

  get mode(): ShellIsolationMode {
    return this.options.mode;
  }

  /**
   * Runs the probe now (for `auto` and `namespace`) so that a host without namespaces is
   * reported at server start rather than at the first command. Never rejects.
   */
  async check(): Promise<ShellIsolationProbe> {
    if (this.options.mode === 'none') return { ok: true };
    return this.probed();
  }

  /** How to start `command` in `workspace` (an absolute, existing directory). */
  async launchFor(command: string, workspace: string): Promise<ShellLaunch> {
    if (this.options.mode === 'none') return unconfinedLaunch(command);
    if (this.options.mode === 'auto' && !(await this.probed()).ok) return unconfinedLaunch(command);
    return namespaceLaunch(this.unshare, command, workspace, this.hiddenDirs);
  }

  /** The error of a confined launch that did not report `ready`; `stderr` is what it wrote. */
  setupError(stderr: string): string {
    return `the command was not run: its isolation could not be set up (${firstLine(stderr) || 'no reason given'})`;
  }

  private probed(): Promise<ShellIsolationProbe> {
    this.probe ??= probeNamespaceIsolation(this.unshare, this.hiddenDirs).then((probe) => {
      if (!probe.ok) this.warn(probe.error);
      return probe;
    });
    return this.probe;
  }

  private warn(reason: string): void {
    const line =
      this.options.mode === 'auto'
        ? `warning: shell commands are NOT isolated: namespaces are unavailable on this host (${reason}); they run as the server's user and can read what it can (HARNESS_SHELL_ISOLATION=auto)`
        : `warning: shell commands will fail: HARNESS_SHELL_ISOLATION=namespace but namespaces are unavailable on this host (${reason})`;
    (this.options.warn ?? ((text: string) => process.stderr.write(`${text}\n`)))(line);
  }
}

/** The probe run synchronously, without the hidden directories of a server: lets tests choose at load time what to run. */
export function probeNamespaceIsolationSync(unshare = 'unshare'): ShellIsolationProbe {
  const setup = probeSetup(unshare, []);
  try {
    const result = spawnSync(setup.launch.file, setup.launch.args, {
      cwd: setup.workspace,
      env: setup.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      timeout: PROBE_TIMEOUT_MS,
    });
    if (result.error) return { ok: false, error: `could not start ${unshare}: ${messageOf(result.error)}` };
    const text = (index: number) => (result.output[index] as Buffer | null)?.toString('utf8') ?? '';
    return probeVerdict(result.status, text(1), text(2), text(3));
  } finally {
    setup.cleanup();
  }
}

/**
 * Runs a real namespace launch on a scratch workspace next to a hidden marker file, together
 * with the configured hidden directories; it passes when the command runs, sees a fresh pid
 * namespace and the workspace's own file, and cannot see the marker.
 */
function probeNamespaceIsolation(unshare: string, hiddenDirs: readonly string[]): Promise<ShellIsolationProbe> {
  let setup: ReturnType<typeof probeSetup>;
  try {
    setup = probeSetup(unshare, hiddenDirs);
  } catch (error) {
    return Promise.resolve({ ok: false, error: `could not prepare the probe: ${messageOf(error)}` });
  }
  return new Promise<ShellIsolationProbe>((resolve) => {
    const child = spawn(setup.launch.file, setup.launch.args, {
      cwd: setup.workspace,
      env: setup.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    const output = ['', '', '', ''];
    for (const index of [1, 2, 3]) {
      (child.stdio[index] as NodeJS.ReadableStream).on('data', (chunk: Buffer) => (output[index] += chunk.toString('utf8')));
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid ?? 0), 'SIGKILL');
      } catch {
        // already gone
      }
    }, PROBE_TIMEOUT_MS);
    timer.unref();
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ ok: false, error: `could not start ${unshare}: ${messageOf(error)}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(probeVerdict(code, output[1], output[2], output[3]));
    });
  }).finally(() => setup.cleanup());
}

function probeSetup(unshare: string, hiddenDirs: readonly string[]) {
  const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-shell-probe-')));
  const workspace = path.join(scratch, 'workspace');
  fs.mkdirSync(workspace);
  fs.writeFileSync(path.join(workspace, 'visible'), '');
  fs.writeFileSync(path.join(scratch, 'hidden'), '');
  const command = '[ "$PPID" = 1 ] && [ -e visible ] && [ ! -e ../hidden ] && echo isolated';
  return {
    workspace,
    env: { PATH: process.env.PATH || DEFAULT_SHELL_PATH },
    launch: namespaceLaunch(unshare, command, workspace, [scratch, ...hiddenDirs]),
    cleanup: () => fs.rmSync(scratch, { recursive: true, force: true }),
  };
}

function probeVerdict(code: number | null, stdout: string, stderr: string, ready: string): ShellIsolationProbe {
  if (code === 0 && ready === READY + '\n' && stdout === 'isolated\n') return { ok: true };
  return { ok: false, error: firstLine(stderr) || `the probe exited with ${code ?? 'a signal'} and output '${firstLine(stdout)}'` };
}

function unconfinedLaunch(command: string): ShellLaunch {
  return { file: '/bin/sh', args: ['-c', command], confined: false };
}

function namespaceLaunch(unshare: string, command: string, workspace: string, hiddenDirs: readonly string[]): ShellLaunch {
  return {
    file: unshare,
    args: [
      '--user',
      '--map-root-user',
      '--pid',
      '--fork',
      '--kill-child',
      '--mount',
      '--mount-proc',
      '--',
      '/bin/sh',
      '-c',
      NAMESPACE_PRELUDE,
      'harness-shell',
      workspace,
      command,
      ...hiddenDirs,
    ],
    confined: true,
  };
}

function firstLine(text: string): string {
  const line = text.split('\n').find((candidate) => candidate.trim() !== '') ?? '';
  return line.trim().slice(0, 300);
}
