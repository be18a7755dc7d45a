import * as fs from 'node:fs';
import { RestartableServer } from './support/restartable-server';
import { liveProcessesWith, shellIsolationModes } from './support/shell-processes';
import { waitUntil } from './support/server-process';

const TOKEN = 'background-token';

const modes = shellIsolationModes();

/**
 * A background (`async:true`) shell command runs in a process group of its own, so nothing of the
 * server's own exit reaches it: the server must stop it, or it outlives the server.
 */
describe.each(modes)('a server stopped while a background shell command runs (HARNESS_SHELL_ISOLATION=%s)', (mode, runnable) => {
  let harness: RestartableServer;
  const strays: number[] = [];

  beforeEach(async () => {
    harness = await RestartableServer.create(TOKEN, 'harness-background-');
  });

  afterEach(async () => {
    for (const pid of strays.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await harness.dispose();
  });

  (runnable ? it : it.skip)('kills the command with the server on SIGTERM: the rest of it never runs', async () => {
    const { api, client } = await harness.start({ HARNESS_CLOUD_SHELL: 'on', HARNESS_SHELL_ISOLATION: mode });
    const session = (await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL', workspace: 'bg' })).body as { id: number };
    const seconds = `6.${process.pid % 1000}${Date.now() % 1000}`;
    harness.provider.script(
      { toolCalls: [{ id: 'call_bg', name: 'shell', arguments: { command: `sleep ${seconds}; touch after.txt`, async: true } }] },
      { content: 'Started it.' },
    );
    const posted = await api.post(`/api/sessions/${session.id}/messages`, { content: 'start it in the background' });
    await client.waitForRunEvent('message_end', posted.body.executionId as string);
    await waitUntil(async () => liveProcessesWith(seconds).length > 0, 'the background command runs', 5_000);
    strays.push(...liveProcessesWith(seconds));

    expect(await harness.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(liveProcessesWith(seconds)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, Number(seconds) * 1000 + 500));
    expect(fs.existsSync(harness.workspaceFile('bg', 'after.txt'))).toBe(false);
  }, 30_000);
});
