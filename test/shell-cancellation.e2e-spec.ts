import * as fs from 'node:fs';
import * as path from 'node:path';
import { isRunning, processesWith, shellIsolationModes } from './support/shell-processes';
import { createSession, startRun, startTestHarness, waitUntil, type TestHarness } from './support/test-harness';

let unique = 0;
/** A number no other process on the host has among its arguments: `sleep` takes it as seconds. */
const sleepArg = () => `${700 + (process.pid % 1000)}.${Date.now() % 100000}${unique++}`;

const modes = shellIsolationModes();

describe.each(modes)('cancelling a run while its CLOUD shell command runs (HARNESS_SHELL_ISOLATION=%s)', (mode, runnable) => {
  let t: TestHarness;
  const strayPids: number[] = [];

  beforeEach(async () => {
    t = await startTestHarness({ env: { HARNESS_CLOUD_SHELL: 'on', HARNESS_SHELL_ISOLATION: mode } });
  });

  afterEach(async () => {
    for (const pid of strayPids.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await t.close();
  });

  (runnable ? it : it.skip)('kills the command and its background child within a second; the rest of the command never runs', async () => {
    const session = await createSession(t.userA, { executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'cancel' });
    const workspace = path.join(t.workspaceRoot, 'user-1', 'cancel');
    const client = await t.connect();
    const [child, foreground] = [sleepArg(), sleepArg()];
    const command = `sleep ${child} & sleep ${foreground}; touch done`;
    t.provider.script({ toolCalls: [{ id: 'call_sleep', name: 'shell', arguments: { command } }] }, { content: 'not reached' });
    const executionId = await startRun(t.userA, session.id, 'sleep, then touch done');

    let pids: number[] = [];
    await waitUntil(() => {
      const sleeps = [processesWith(child), processesWith(foreground)];
      pids = [...sleeps.flat(), ...processesWith(command)];
      return sleeps.every((found) => found.length === 1);
    }, 'both sleeps run');
    strayPids.push(...pids);

    const cancelled = await t.userA.post(`/api/sessions/${session.id}/cancel`);
    expect(cancelled.status).toBe(202);
    await waitUntil(() => pids.every((pid) => !isRunning(pid)), 'every process of the command is gone', 1000);

    await client.waitForRunEvent('message_end', executionId);
    const result = client.runEvents(executionId).find((event) => event.type === 'tool_call_result');
    expect(result?.data).toEqual(expect.objectContaining({ tool_call_id: 'call_sleep', status: 'error' }));
    expect(String(result?.data.result)).toMatch(/cancelled/);
    expect(fs.existsSync(path.join(workspace, 'done'))).toBe(false);
  });
});
