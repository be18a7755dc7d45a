import * as fs from 'node:fs';
import { probeNamespaceIsolationSync } from '../../src/harness/tool/impl/shell-isolation';

/** Host pids of processes with `arg` among their arguments (zombies included: see `isRunning`). */
export function processesWith(arg: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(arg)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Whether `pid` still runs: it answers signal 0 and is not a zombie waiting to be reaped. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

/** Live (not zombie) processes with `arg` among their arguments. */
export function liveProcessesWith(arg: string): number[] {
  return processesWith(arg).filter(isRunning);
}

/**
 * The `HARNESS_SHELL_ISOLATION` modes a shell test runs in, each with whether it can run here:
 * `namespace` where this host allows it (always when `HARNESS_TEST_REQUIRE_NAMESPACES=1`, so CI
 * fails rather than skips), `none` everywhere.
 */
export function shellIsolationModes(): Array<['namespace' | 'none', boolean]> {
  const namespaces = probeNamespaceIsolationSync();
  const required = process.env.HARNESS_TEST_REQUIRE_NAMESPACES === '1';
  return [
    ['namespace', namespaces.ok || required],
    ['none', true],
  ];
}
