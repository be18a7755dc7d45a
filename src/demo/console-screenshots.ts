import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import type { RunningHarness } from '../main';
import { startDemoServer } from './demo-server';
import { CONSOLE_MARKERS, CONSOLE_MCP_SERVER_IDS, CONSOLE_TEXTS, consoleMcpConfig, consoleScenario } from './console-scenario';

/**
 * `npm run screenshots`: the server in-process with the scripted model of the console's browser
 * tests, the built console (`dist/console`), and headless Chromium (Debian's `chromium`, or
 * `CHROMIUM=...`) driving it. Writes `docs/images/console-*.png` (1280×800), which the README shows.
 */

const TOKEN = 'screenshots';
const REPO_ROOT = path.resolve(__dirname, '../../..');
const OUT = path.join(REPO_ROOT, 'docs/images');
const VIEWPORT = { width: 1280, height: 800 };
const WAIT_MS = 20_000;

async function main(): Promise<void> {
  const server = await startDemoServer({
    token: TOKEN,
    scenario: consoleScenario(),
    name: 'harness-screenshots',
    mcpConfig: consoleMcpConfig(__dirname),
    consoleDir: path.join(REPO_ROOT, 'dist/console'),
  });
  const { harness } = server;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking'],
  });
  try {
    fs.mkdirSync(OUT, { recursive: true });
    const page = await browser.newPage({ viewport: VIEWPORT, colorScheme: 'light' });
    page.setDefaultTimeout(WAIT_MS);
    await page.goto(harness.url);
    await page.getByLabel('Token').fill(TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sessions', exact: true }).waitFor();

    // A few sessions of different kinds, so that the list has something to show.
    await createSession(harness, { executionMode: 'LOCAL', permissionLevel: 'SMART', workspace: 'desktop-project' });
    await createSession(harness, { executionMode: 'CLOUD', permissionLevel: 'READ_ONLY' });
    const tools = await createSession(harness, { executionMode: 'CLOUD', permissionLevel: 'FULL', mcpServers: [CONSOLE_MCP_SERVER_IDS.content] });

    await openSession(page, harness, tools);
    await send(page, `${CONSOLE_MARKERS.tools} Take notes, then a screenshot of the build page.`);
    await page.getByText(CONSOLE_TEXTS.toolsDone).waitFor();
    await page.locator('.image-attachment img').waitFor();
    await page.locator('.activity-log li').nth(3).waitFor();
    // The end of the run in view: the last tool cards, the image, the answer.
    await page.evaluate("document.querySelector('.run-end')?.scrollIntoView({ block: 'end' }); scrollBy(0, 16)");
    await shoot(page, 'console-session.png');

    await page.goto(`${harness.url}/#/tools?session=${tools}`);
    await page.getByRole('article', { name: /mcp__content__pixel/ }).waitFor();
    await page.getByLabel('Filter').fill('mcp__');
    await shoot(page, 'console-tools.png');

    const approve = await createSession(harness, { executionMode: 'CLOUD', permissionLevel: 'READ_WRITE' });
    await openSession(page, harness, approve);
    await send(page, `${CONSOLE_MARKERS.approve} Check that the build still works.`);
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    await shoot(page, 'console-approval.png');

    const ask = await createSession(harness, { executionMode: 'CLOUD', permissionLevel: 'FULL' });
    await openSession(page, harness, ask);
    await send(page, `${CONSOLE_MARKERS.ask} Make a chart of the build times.`);
    await page.getByRole('button', { name: 'Send answers' }).waitFor();
    await page.getByRole('radio', { name: 'blue' }).check();
    await shoot(page, 'console-questions.png');

    await page.goto(`${harness.url}/#/sessions`);
    await page.getByRole('link', { name: `Session ${ask}`, exact: true }).waitFor();
    await shoot(page, 'console-sessions.png');
  } finally {
    await browser.close();
    await server.close();
  }
}

async function createSession(harness: RunningHarness, body: Record<string, unknown>): Promise<number> {
  const response = await fetch(`${harness.url}/api/sessions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`POST /api/sessions: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: number }).id;
}

async function openSession(page: Page, harness: RunningHarness, sessionId: number): Promise<void> {
  await page.goto(`${harness.url}/#/sessions/${sessionId}`);
  await page.getByRole('status').filter({ hasText: /^Idle$/ }).waitFor();
}

async function send(page: Page, message: string): Promise<void> {
  await page.getByLabel('Message').fill(message);
  await page.getByRole('button', { name: 'Send' }).click();
}

async function shoot(page: Page, file: string): Promise<void> {
  // No caret or focus ring in the pictures.
  await page.evaluate('document.activeElement?.blur()');
  await page.screenshot({ path: path.join(OUT, file) });
  console.log(`wrote docs/images/${file}`);
}

main().catch((error: unknown) => {
  console.error(`screenshots failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
