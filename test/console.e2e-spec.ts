import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { CONSOLE_MARKERS, CONSOLE_MCP_SERVER_IDS, CONSOLE_TEXTS, consoleMcpConfig, consoleScenario } from '../src/demo/console-scenario';
import { browserTestsRun, launchChromium, openConsolePage, requireBuiltConsole, signIn, textsOf, toolCard, waitForPage, waitForText, type ConsolePage } from './support/console-browser';
import { requireBuiltContentMcpServer } from './support/content-mcp-server';
import { HttpClient } from './support/http-client';
import { spawnServer, waitUntilListening, type ServerProcess } from './support/server-process';
import { requireBuiltSlowMcpServer } from './support/slow-mcp-server';
import { withTimeout, type WsEvent } from './support/ws-test-client';

const REPO_ROOT = path.resolve(__dirname, '..');
const DEMO_DIR = path.join(REPO_ROOT, 'build/dev/demo');
const TOKEN = 'console-token';

const browser = browserTestsRun();
const describeInBrowser = browser.run ? describe : describe.skip;

/**
 * The web console in real headless Chromium, against the real server process (`node dist/main.js`)
 * with the scripted model of `src/demo/console-scenario.ts`, its content and slow MCP servers.
 */
describeInBrowser('the web console in a browser', () => {
  jest.setTimeout(90_000);
  let scratch: string;
  let server: ServerProcess;
  let serverEnv: Record<string, string>;
  let url: string;
  let api: HttpClient;
  let chromium: Browser;
  let open: ConsolePage | null = null;

  beforeAll(async () => {
    requireBuiltConsole();
    requireBuiltContentMcpServer();
    requireBuiltSlowMcpServer();
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-console-'));
    const mcpConfig = path.join(scratch, 'mcp.json');
    fs.writeFileSync(mcpConfig, JSON.stringify(consoleMcpConfig(DEMO_DIR)));
    const script = path.join(scratch, 'scenario.json');
    fs.writeFileSync(script, JSON.stringify(consoleScenario()));
    serverEnv = {
      PORT: '0',
      HARNESS_DB: path.join(scratch, 'harness.db'),
      HARNESS_WORKSPACE_ROOT: path.join(scratch, 'workspaces'),
      HARNESS_TOKENS: `${TOKEN}=1`,
      HARNESS_MCP_CONFIG: mcpConfig,
      HARNESS_CLOUD_SHELL: 'on',
      LLM_PROTOCOL: 'scripted',
      LLM_SCRIPT: script,
    };
    server = spawnServer(serverEnv);
    url = await waitUntilListening(server, 20_000);
    api = new HttpClient(url, TOKEN);
    chromium = await launchChromium();
  });

  afterEach(async () => {
    const page = open;
    open = null;
    if (!page) return;
    await page.close();
    // A console error (a CSP refusal among them) or an uncaught exception is a failure of the page.
    expect(page.problems).toEqual([]);
  });

  afterAll(async () => {
    await chromium?.close();
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await withTimeout(server.exited, 15_000, 'the server did not stop').catch(() => server.child.kill('SIGKILL'));
    }
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  async function openConsole(viewport?: { width: number; height: number }): Promise<Page> {
    open = await openConsolePage(chromium, url, viewport);
    return open.page;
  }

  /** A session made over the API, opened in a signed-in page. */
  async function openSession(body: Record<string, unknown>): Promise<{ page: Page; sessionId: number }> {
    const created = await api.post('/api/sessions', body);
    if (created.status !== 201) throw new Error(`POST /api/sessions: ${created.status} ${created.text}`);
    const page = await openConsole();
    await signIn(page, TOKEN);
    await page.goto(`${url}/#/sessions/${created.body.id}`);
    await page.getByRole('heading', { name: `Session ${created.body.id}` }).waitFor();
    await page.getByRole('status').filter({ hasText: /^Idle$/ }).waitFor();
    return { page, sessionId: created.body.id };
  }

  async function send(page: Page, message: string): Promise<void> {
    await page.getByLabel('Message').fill(message);
    await page.getByLabel('Message').press('Control+Enter');
  }

  async function eventLog(sessionId: number): Promise<WsEvent[]> {
    const events: WsEvent[] = [];
    for (let after: number | null = 0; after !== null; ) {
      const page: { events: WsEvent[]; next: number | null } = (await api.get(`/api/sessions/${sessionId}/events?after=${after}&limit=1000`)).body;
      events.push(...page.events);
      after = page.next;
    }
    return events;
  }

  it('signs in with a token kept for this tab only, and refuses a wrong one', async () => {
    const page = await openConsole();
    await page.getByLabel('Token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'The server did not accept this token.' }).waitFor();
    // The browser logs the refused check itself: expected here, and nowhere else.
    expect(open!.problems.splice(0)).toEqual([expect.stringContaining('401 (Unauthorized)')]);

    await signIn(page, TOKEN);
    expect(await page.evaluate('[sessionStorage.length, localStorage.length, document.cookie]')).toEqual([1, 0, '']);
    await page.reload();
    await page.getByRole('heading', { name: 'Sessions', exact: true }).waitFor();
    await page.getByRole('status').filter({ hasText: /^Connection: Live$/ }).waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
  });

  it('starts a session from the form and shows a multi-tool run as it streams, with its image result', async () => {
    const page = await openConsole();
    await signIn(page, TOKEN);
    await page.getByRole('link', { name: 'New session' }).click();
    await page.getByRole('heading', { name: 'New session' }).waitFor();
    await page.getByRole('radio', { name: /CLOUD/ }).check();
    await page.getByLabel('Permission level').selectOption('FULL');
    await page.getByLabel('MCP servers').fill(`${CONSOLE_MCP_SERVER_IDS.content}`);
    await page.getByRole('button', { name: 'Create session' }).click();
    const heading = page.getByRole('heading', { name: /^Session \d+$/ });
    await heading.waitFor();
    const sessionId = Number((await heading.textContent())?.replace('Session ', ''));
    await page.getByRole('status').filter({ hasText: /^Idle$/ }).waitFor();
    await send(page, `${CONSOLE_MARKERS.tools} Take notes and a screenshot.`);

    await page.getByText(CONSOLE_TEXTS.toolsDone).waitFor();
    for (const tool of ['write_file', 'read_file', 'glob', 'mcp__content__pixel']) {
      await waitForText(toolCard(page, tool).locator('.tool-status'), 'Succeeded');
    }
    expect(await textsOf(page.locator('.user-message .text'))).toEqual([`${CONSOLE_MARKERS.tools} Take notes and a screenshot.`]);
    expect(await textsOf(page.locator('.assistant-message .text'))).toEqual([CONSOLE_TEXTS.toolsStart, CONSOLE_TEXTS.toolsDone]);
    expect(await page.locator('.thinking .text').textContent()).toBe(CONSOLE_TEXTS.toolsThinking);
    await waitForText(toolCard(page, 'read_file').locator('.result-text'), '- alpha');
    await toolCard(page, 'write_file').getByText('Arguments').click();
    await waitForText(toolCard(page, 'write_file').locator('.arguments pre'), '"path": "notes.md"');

    // The image came as an attachment, fetched with the token and shown from a blob URL.
    const image = toolCard(page, 'mcp__content__pixel').getByRole('img');
    await image.waitFor();
    await waitForPage(page, '[...document.images].some((image) => image.complete && image.naturalWidth === 1)');
    expect(await image.getAttribute('src')).toMatch(/^blob:/);
    await waitForText(page.locator('.run-end'), 'Finished');

    // The activity log has one entry per call, each with its recorded status.
    const log = page.getByRole('complementary', { name: 'Activity' });
    await log.locator('li').nth(3).waitFor();
    expect((await textsOf(log.locator('li code'))).sort()).toEqual(['glob', 'mcp__content__pixel', 'read_file', 'write_file']);

    // And the list shows the session.
    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    await page.getByRole('link', { name: `Session ${sessionId}`, exact: true }).waitFor();
  });

  it('stays readable on a narrow window', async () => {
    const created = await api.post('/api/sessions', { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    const page = await openConsole({ width: 360, height: 740 });
    await signIn(page, TOKEN);
    for (const hash of ['#/sessions', `#/sessions/${created.body.id}`, '#/tools', '#/sessions/new']) {
      await page.goto(`${url}/${hash}`);
      await page.locator('h1').waitFor();
      expect([hash, await page.evaluate('document.documentElement.scrollWidth')]).toEqual([hash, 360]);
    }
  });

  it('resumes a run after a reload from the event log, losing and doubling nothing, then cancels it', async () => {
    const { page, sessionId } = await openSession({ executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [CONSOLE_MCP_SERVER_IDS.slow] });
    await send(page, `${CONSOLE_MARKERS.slow} Do the long job.`);
    await waitForText(toolCard(page, 'mcp__slow__work', 0).locator('.tool-status'), 'Succeeded');
    const mainJob = toolCard(page, 'mcp__slow__work', 1);
    await waitForText(mainJob.locator('.progress-text'), 'of 120000 ms');

    await page.reload();
    await page.getByRole('heading', { name: `Session ${sessionId}` }).waitFor();
    await page.getByRole('status').filter({ hasText: /^Running$/ }).waitFor();
    // Progress that arrives after the reload is shown: the page follows the run live again.
    const before = await mainJob.locator('.progress-text').textContent();
    await waitForPage(page, `document.querySelectorAll('.tool-card')[1]?.querySelector('.progress-text')?.textContent !== ${JSON.stringify(before)}`);
    expect(await textsOf(page.locator('.user-message .text'))).toEqual([`${CONSOLE_MARKERS.slow} Do the long job.`]);
    expect(await textsOf(page.locator('.assistant-message .text'))).toEqual([CONSOLE_TEXTS.slowStart, CONSOLE_TEXTS.slowMain]);
    expect(await page.locator('.tool-card').count()).toBe(2);
    await waitForText(mainJob.locator('.tool-status'), 'Running');

    await page.getByRole('button', { name: 'Cancel run' }).click();
    await waitForText(mainJob.locator('.tool-status'), 'Cancelled');
    await waitForText(page.locator('.run-end'), 'Cancelled');
    await page.getByRole('status').filter({ hasText: /^Idle$/ }).waitFor();
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);

    // What the page shows is what the log holds: every call once, every text once.
    const log = await eventLog(sessionId);
    expect(await page.locator('.tool-card').count()).toBe(log.filter((event) => event.type === 'tool_call_start').length);
    const streamed = log.filter((event) => event.type === 'content_delta').map((event) => event.data.delta).join('');
    expect((await textsOf(page.locator('.assistant-message .text'))).join('')).toBe(streamed);
    expect(await textsOf(page.locator('.user-message .text'))).toEqual([`${CONSOLE_MARKERS.slow} Do the long job.`]);
  });

  it('answers the agent’s questions in the page', async () => {
    const { page } = await openSession({ executionMode: 'CLOUD', permissionLevel: 'FULL' });
    await send(page, `${CONSOLE_MARKERS.ask} Make me a chart.`);
    const card = page.getByRole('article', { name: 'Questions from the agent' });
    await card.getByRole('radio', { name: 'blue' }).check();
    await card.getByLabel(CONSOLE_TEXTS.askTitle).fill('Build times');
    await card.getByRole('button', { name: 'Send answers' }).click();

    await page.getByText(CONSOLE_TEXTS.askDone).waitFor();
    await waitForText(card, 'Answered.');
    expect(await textsOf(card.locator('.answer'))).toEqual(['— blue', '— Build times']);
    await waitForText(toolCard(page, 'ask_user_questions').locator('.result-text'), '"Which colour should the chart use?":"blue"');
  });

  describe('approvals (CLOUD, READ_WRITE)', () => {
    it('shows a shell call’s approval request and runs the command once approved from the keyboard', async () => {
      const { page } = await openSession({ executionMode: 'CLOUD', permissionLevel: 'READ_WRITE' });
      await send(page, `${CONSOLE_MARKERS.approve} Check the build.`);
      const card = toolCard(page, 'shell');
      await waitForText(card.locator('.tool-status'), 'Waiting for approval');
      // The request is in the event log: a reloaded page finds it, still waiting.
      await page.reload();
      await waitForText(card.locator('.tool-status'), 'Waiting for approval');
      await page.getByRole('button', { name: 'Go to it' }).click();
      expect(await page.evaluate('document.activeElement?.textContent')).toBe('Approve');
      await page.keyboard.press('Enter');

      await waitForText(card.locator('.approval.resolved'), 'Approved');
      expect(await card.getByRole('button', { name: 'Approve' }).count()).toBe(0);
      await waitForText(card.locator('.tool-status'), 'Succeeded');
      await waitForText(card.locator('.result-text'), 'build checked by the console');
      await page.getByText(CONSOLE_TEXTS.approveDone).waitFor();
    });

    it('denies a call with a note: the command does not run', async () => {
      const { page } = await openSession({ executionMode: 'CLOUD', permissionLevel: 'READ_WRITE' });
      await send(page, `${CONSOLE_MARKERS.approve} Check the build.`);
      const card = toolCard(page, 'shell');
      await card.getByLabel('Note to the agent (optional)').fill('not on this machine');
      await card.getByRole('button', { name: 'Deny' }).click();

      await waitForText(card.locator('.approval.resolved'), 'Denied');
      await waitForText(card.locator('.approval.resolved'), 'not on this machine');
      await waitForText(card.locator('.tool-status'), 'Failed');
      expect(await card.locator('.result-text').textContent()).not.toContain('build checked by the console');
      await page.getByText(CONSOLE_TEXTS.approveDone).waitFor();
    });
  });

  it('lists the tool catalog with source and executor, and a session’s MCP tools', async () => {
    const { page, sessionId } = await openSession({ executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [CONSOLE_MCP_SERVER_IDS.content] });
    await page.getByRole('link', { name: 'Tools of this session' }).click();
    await page.getByRole('heading', { name: `Tools of session ${sessionId}` }).waitFor();
    const pixel = page.getByRole('article', { name: /mcp__content__pixel/ });
    await waitForText(pixel, 'MCP');
    await waitForText(pixel, 'runs on its MCP server');
    await waitForText(pixel, `server ${CONSOLE_MCP_SERVER_IDS.content}`);
    await waitForText(pixel, 'as pixel');

    await page.getByRole('link', { name: 'Tools', exact: true }).click();
    await page.getByRole('heading', { name: 'Tools', exact: true }).waitFor();
    const readFile = page.getByRole('article', { name: 'read_file', exact: true });
    await waitForText(readFile, 'built-in');
    await waitForText(readFile, 'runs on the server');
    await waitForText(readFile, 'Read file');
    await waitForText(readFile.locator('.badges').filter({ hasText: 'Hints' }), 'read-only');
    await waitForText(page.getByRole('article', { name: 'shell', exact: true }), 'runs commands');
    expect(await page.getByRole('article', { name: /mcp__content__pixel/ }).count()).toBe(0);
    await page.getByLabel('Filter').fill('shell');
    await waitForText(page.getByRole('status').filter({ hasText: 'tools' }), '1 of');
  });

  // Last: it restarts the server (same database, same port).
  it('reconnects after the server restarts and shows how the run it was watching ended', async () => {
    const { page } = await openSession({ executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [CONSOLE_MCP_SERVER_IDS.slow] });
    await send(page, `${CONSOLE_MARKERS.slow} Do the long job.`);
    await waitForText(toolCard(page, 'mcp__slow__work', 1).locator('.tool-status'), 'Running');

    server.child.kill('SIGTERM');
    expect(await withTimeout(server.exited, 15_000, 'the server did not stop')).toEqual({ code: 0, signal: null });
    await page.getByRole('status').filter({ hasText: /^Connection: Reconnecting…$/ }).waitFor();
    server = spawnServer({ ...serverEnv, PORT: String(new URL(url).port) });
    await waitUntilListening(server, 20_000);

    await page.getByRole('status').filter({ hasText: /^Connection: Live$/ }).waitFor({ timeout: 30_000 });
    await waitForText(page.locator('.run-end'), 'the server is shutting down');
    await waitForText(toolCard(page, 'mcp__slow__work', 1).locator('.tool-status'), 'Cancelled');
    await page.getByRole('status').filter({ hasText: /^Idle$/ }).waitFor();
    expect(await textsOf(page.locator('.assistant-message .text'))).toEqual([CONSOLE_TEXTS.slowStart, CONSOLE_TEXTS.slowMain]);
    // The socket's drop and the reconnection attempts are logged by the browser: expected here.
    open!.problems.splice(0, open!.problems.length, ...open!.problems.filter((problem) => !/WebSocket|ERR_CONNECTION_REFUSED/.test(problem)));
  });
});

if (!browser.run) {
  describe('the web console in a browser', () => {
    it.skip(browser.skipNote ?? 'skipped', () => undefined);
  });
}
