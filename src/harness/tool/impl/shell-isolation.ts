import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { errorMessage } from '../../runtime/error-message';
import { DEFAULT_SHELL_PATH } from './shell-environment';

/** `HARNESS_SHELL_ISOLATION`: how `shell` commands are confined. */
export type ShellIsolationMode = 'auto' | 'namespace' | 'none';

export const SHELL_ISOLATION_MODES: readonly ShellIsolationMode[] = ['auto', 'namespace', 'none'];

/** What a confined launch writes to file descriptor 3 once the confinement is in place. */
const READY = 'ready';

/** How long the probe may take before it counts as failed. */
const PROBE_TIMEOUT_MS = 10_000;

/** The search path of the setup steps: system directories only, never the workspace. */
const SYSTEM_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

/** The user confined commands run as when the server itself runs as root (`nobody`). */
export const DEFAULT_UNPRIVILEGED_USER: UnprivilegedUser = { uid: 65534, gid: 65534 };

/** A uid/gid pair without privileges on the host. */
export interface UnprivilegedUser {
  uid: number;
  gid: number;
}

/**
 * Run by `/bin/sh` inside the new pid and mount namespaces (where it is pid 1) with `$1` = the
 * workspace, `$2` = the command, `$3` = `uid:gid` to drop to (empty: see below), `$4…` = the
 * paths to hide (a directory is covered by an empty tmpfs, a file by `/dev/null`). Nothing it is given becomes shell source: every value is a positional
 * parameter, always quoted. Its own steps use `SYSTEM_PATH`; the command gets the `PATH` it was
 * given back.
 *
 * It enters the workspace first, so its working directory keeps the real workspace after an
 * empty tmpfs is mounted over each hidden directory; then it recreates the workspace path and
 * binds that directory back there (`--no-canonicalize` keeps `.` from being resolved to the now
 * empty path), re-enters it through the new mount so that `..` leads into the empty tmpfs, and
 * hides again any hidden directory that lies inside the workspace. Any failure ends it before
 * the command is reached.
 *
 * Then the command runs without the power to undo any of it:
 * - `$3` empty (the server is not root; the namespaces were made with a user namespace that maps
 *   root to the server's user): in one more user and mount namespace, where the mounts copied
 *   from a namespace owned by a more privileged user namespace are locked, so the tmpfs layers
 *   cannot be unmounted to look beneath them.
 * - `$3` = `uid:gid` (the server is root, and so is this shell, for real): the workspace is handed
 *   to that user (`chown -R`, links themselves, never followed) and the command runs as it with
 *   no capabilities, no supplementary groups and `no_new_privs` — root inside the namespaces is
 *   root on the host, who could write `/proc/sys` or any file.
 *
 * The innermost shell reports `ready` on descriptor 3 and closes it before running the command.
 * The prelude stays pid 1 and exits with the command's status; when it exits, everything still
 * running in the namespace is killed. It must stay in the process group of `unshare` (which
 * forks it; `--kill-child` kills it should `unshare` die): `ShellTool` stops a command that timed
 * out or was cancelled by killing that group, and reaches everything else through this pid 1.
 */
export const NAMESPACE_PRELUDE = [
  'set -e',
  'command_path=$PATH',
  `PATH=${SYSTEM_PATH}`,
  'workspace=$1',
  'command=$2',
  'drop_to=$3',
  'shift 3',
  'cd "$workspace"',
  'hide() {',
  '  if [ -d "$1" ]; then mount -t tmpfs -o mode=0755,size=64k harness-hidden "$1";',
  '  elif [ -e "$1" ]; then mount --bind /dev/null "$1"; fi',
  '}',
  'for hidden do',
  '  hide "$hidden"',
  'done',
  'mkdir -p "$workspace"',
  'mount --no-canonicalize --bind . "$workspace"',
  'cd "$workspace"',
  'for hidden do',
  '  case $hidden in',
  '    "$workspace"/*) hide "$hidden" ;;',
  '  esac',
  'done',
  `run='PATH=$2; echo ${READY} >&3 && exec 3>&- && exec /bin/sh -c "$1"'`,
  'if [ -z "$drop_to" ]; then',
  '  set +e',
  '  unshare --user --map-root-user --mount -- /bin/sh -c "$run" harness-shell "$command" "$command_path"',
  'else',
  '  chown -R -h -P "$drop_to" "$workspace"',
  '  set +e',
  '  setpriv --reuid="${drop_to%:*}" --regid="${drop_to#*:}" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs \\',
  '    -- /bin/sh -c "$run" harness-shell "$command" "$command_path"',
  'fi',
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
   * Paths confined commands must not see (the workspace root, the database directory or files):
   * a directory is covered by an empty tmpfs, with only the session's own workspace bound back;
   * a file by `/dev/null`. Absolute paths; one that does not exist is skipped.
   */
  hiddenPaths?: readonly string[];
  /**
   * The `unshare` program (default: `unshare` found in an absolute directory of the server's
   * `PATH`, else `/usr/bin/unshare`; never looked up relative to the workspace).
   */
  unshare?: string;
  /**
   * Whether the server runs as root (default: its effective uid is 0). A root server's commands
   * run as `DEFAULT_UNPRIVILEGED_USER`.
   */
  runsAsRoot?: boolean;
  /** Receives the one warning line about missing confinement (default: stderr). */
  warn?: (line: string) => void;
}

/**
 * Decides how `shell` commands are started.
 *
 * - `namespace`: every command runs through `unshare` in new pid and mount namespaces (inside
 *   a user namespace for a server that is not root; as `DEFAULT_UNPRIVILEGED_USER` for one that is),
 *   with a fresh `/proc` (the server's and other sessions' processes are invisible), the hidden
 *   directories covered by empty tmpfs mounts and only the session's workspace bound back at
 *   its own path. A command whose confinement cannot be set up is not run.
 * - `auto`: checks once (at `check()` or the first command) whether that works on this host;
 *   uses it if so, else runs commands unconfined and writes one warning line.
 * - `none`: `/bin/sh -c command` as the server's user.
 */
export class ShellIsolation {
  private probe?: Promise<ShellIsolationProbe>;
  private readonly unshare: string;
  private readonly hiddenPaths: readonly string[];
  private readonly dropTo: UnprivilegedUser | null;

  constructor(private readonly options: ShellIsolationOptions) {
    this.unshare = options.unshare ?? findUnshare();
    this.hiddenPaths = options.hiddenPaths ?? [];
    this.dropTo = dropToFor(options.runsAsRoot ?? serverRunsAsRoot());
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
    return namespaceLaunch(this.unshare, this.dropTo, command, workspace, this.hiddenPaths);
  }

  /** The error of a confined launch that did not report `ready`; `stderr` is what it wrote. */
  setupError(stderr: string): string {
    return `the command was not run: its isolation could not be set up (${firstLine(stderr) || 'no reason given'})`;
  }

  private probed(): Promise<ShellIsolationProbe> {
    this.probe ??= probeNamespaceIsolation(this.unshare, this.dropTo, this.hiddenPaths).then((probe) => {
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

function serverRunsAsRoot(): boolean {
  return process.geteuid?.() === 0;
}

/** Whom a command drops to: nobody on a root server; `null` (a user namespace does it) otherwise. */
function dropToFor(runsAsRoot: boolean): UnprivilegedUser | null {
  return runsAsRoot ? DEFAULT_UNPRIVILEGED_USER : null;
}

/** The probe run synchronously, without the hidden directories of a server: lets tests choose at load time what to run. */
export function probeNamespaceIsolationSync(unshare = findUnshare(), runsAsRoot = serverRunsAsRoot()): ShellIsolationProbe {
  const setup = probeSetup(unshare, dropToFor(runsAsRoot), []);
  try {
    const result = spawnSync(setup.launch.file, setup.launch.args, {
      cwd: setup.workspace,
      env: setup.env,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      timeout: PROBE_TIMEOUT_MS,
    });
    if (result.error) return { ok: false, error: `could not start ${unshare}: ${errorMessage(result.error)}` };
    const text = (index: number) => (result.output[index] as Buffer | null)?.toString('utf8') ?? '';
    return probeVerdict(result.status, text(1), text(2), text(3), setup.expectedUid);
  } finally {
    setup.cleanup();
  }
}

/**
 * Runs a real namespace launch on a scratch workspace next to a hidden marker file, together
 * with the configured hidden directories; it passes when the command runs, sees a fresh pid
 * namespace and the workspace's own file, and cannot see the marker.
 */
function probeNamespaceIsolation(unshare: string, dropTo: UnprivilegedUser | null, hiddenPaths: readonly string[]): Promise<ShellIsolationProbe> {
  let setup: ReturnType<typeof probeSetup>;
  try {
    setup = probeSetup(unshare, dropTo, hiddenPaths);
  } catch (error) {
    return Promise.resolve({ ok: false, error: `could not prepare the probe: ${errorMessage(error)}` });
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
      resolve({ ok: false, error: `could not start ${unshare}: ${errorMessage(error)}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(probeVerdict(code, output[1], output[2], output[3], setup.expectedUid));
    });
  }).finally(() => setup.cleanup());
}

function probeSetup(unshare: string, dropTo: UnprivilegedUser | null, hiddenPaths: readonly string[]) {
  const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'harness-shell-probe-')));
  const workspace = path.join(scratch, 'workspace');
  fs.mkdirSync(workspace);
  fs.writeFileSync(path.join(workspace, 'visible'), '');
  fs.writeFileSync(path.join(scratch, 'hidden'), '');
  const command = '[ "$PPID" = 1 ] && [ -e visible ] && [ ! -e ../hidden ] && echo "isolated as $(id -u)"';
  return {
    workspace,
    // Root inside the user namespace of an unprivileged server; the dropped-to user on a root server.
    expectedUid: dropTo === null ? 0 : dropTo.uid,
    env: { PATH: process.env.PATH || DEFAULT_SHELL_PATH },
    launch: namespaceLaunch(unshare, dropTo, command, workspace, [scratch, ...hiddenPaths]),
    cleanup: () => fs.rmSync(scratch, { recursive: true, force: true }),
  };
}

function probeVerdict(code: number | null, stdout: string, stderr: string, ready: string, expectedUid: number): ShellIsolationProbe {
  if (code === 0 && ready === READY + '\n' && stdout === `isolated as ${expectedUid}\n`) return { ok: true };
  return { ok: false, error: firstLine(stderr) || `the probe exited with ${code ?? 'a signal'} and output '${firstLine(stdout)}'` };
}

function unconfinedLaunch(command: string): ShellLaunch {
  return { file: '/bin/sh', args: ['-c', command], confined: false };
}

function namespaceLaunch(
  unshare: string,
  dropTo: UnprivilegedUser | null,
  command: string,
  workspace: string,
  hiddenPaths: readonly string[],
): ShellLaunch {
  // A root server needs no user namespace to make the others, and must not have one that maps
  // root to root: the prelude drops to `dropTo` instead.
  const namespaces = dropTo === null ? ['--user', '--map-root-user'] : [];
  return {
    file: unshare,
    args: [
      ...namespaces,
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
      dropTo === null ? '' : `${dropTo.uid}:${dropTo.gid}`,
      ...hiddenPaths,
    ],
    confined: true,
  };
}

/**
 * `unshare` from the absolute directories of the server's `PATH`: a relative entry (`.`, or an
 * empty one) would find a program planted in the workspace, which is the working directory.
 */
function findUnshare(): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, 'unshare');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return '/usr/bin/unshare';
}

function firstLine(text: string): string {
  const line = text.split('\n').find((candidate) => candidate.trim() !== '') ?? '';
  return line.trim().slice(0, 300);
}
