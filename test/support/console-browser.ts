import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';

/** Debian's `chromium` package (`.ci/run` installs it when it is missing); HARNESS_TEST_CHROMIUM names another. */
export const CHROMIUM = process.env.HARNESS_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Whether the browser tests run here: a browser is installed, or they are required (and then fail without one). */
export function browserTestsRun(): { run: boolean; skipNote: string | null } {
  if (existsSync(CHROMIUM)) return { run: true, skipNote: null };
  if (process.env.HARNESS_TEST_REQUIRE_BROWSER === '1') return { run: true, skipNote: null };
  return {
    run: false,
    skipNote: `(skipped: no browser at ${CHROMIUM}; install Debian's chromium package, or set HARNESS_TEST_CHROMIUM; HARNESS_TEST_REQUIRE_BROWSER=1 makes this a failure)`,
  };
}

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: apt-get install -y chromium (or set HARNESS_TEST_CHROMIUM)`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-background-networking'] });
}

/** The built console (`npm run build`), which the server process answers at `/`. */
export const CONSOLE_INDEX = path.resolve(__dirname, '../../dist/console/index.html');

export function requireBuiltConsole(): void {
  if (!existsSync(CONSOLE_INDEX)) throw new Error(`${CONSOLE_INDEX} is missing: run npm run build first`);
}

/** A page of its own (fresh storage), that records what the page logged as an error or threw. */
export interface ConsolePage {
  page: Page;
  /** Console errors (a CSP violation is one) and uncaught exceptions, in order. */
  problems: string[];
  close(): Promise<void>;
}

/** How long any one wait of a browser test may take. */
export const BROWSER_WAIT_MS = 15_000;

export async function openConsolePage(browser: Browser, url: string, viewport = { width: 1280, height: 800 }): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.setDefaultTimeout(BROWSER_WAIT_MS);
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  await page.goto(url);
  return { page, problems, close: () => context.close() };
}

/** Signs in through the form and waits for the sessions list. */
export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Sessions', exact: true }).waitFor();
}

/** A tool call's card by tool name; `nth` picks among several cards of the same tool. */
export function toolCard(page: Page, toolName: string, nth = 0): Locator {
  return page.getByRole('article', { name: `Tool call ${toolName}`, exact: true }).nth(nth);
}

/** Waits until the locator's text contains `text`. */
export async function waitForText(locator: Locator, text: string): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor();
}

/**
 * Waits until a script expression is true in the page. Polled from here with `page.evaluate`:
 * Playwright's own `waitForFunction` evaluates strings in the page, which the console's CSP forbids.
 */
export async function waitForPage(page: Page, expression: string, timeoutMs = BROWSER_WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await page.evaluate(expression))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${expression}`);
    await new Promise<void>((resolve) => setTimeout(resolve, 50));
  }
}

/** Texts of all elements the locator matches, trimmed. */
export async function textsOf(locator: Locator): Promise<string[]> {
  return (await locator.allTextContents()).map((text) => text.trim());
}
