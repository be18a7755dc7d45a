import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CONSOLE_CONTENT_SECURITY_POLICY, CONSOLE_NOT_BUILT } from '../src/session/http/console-assets';
import { startTestHarness, type TestHarness } from './support/test-harness';

const INDEX = '<!doctype html><title>console</title><script type="module" src="/app.js"></script>';
const APP = 'console.log("app")';

/** The web console's files at `/`: served without a token, beside an API that still needs one. */
describe('the web console’s files', () => {
  let t: TestHarness | null = null;
  let scratch: string;

  beforeEach(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'harness-console-assets-'));
  });

  afterEach(async () => {
    await t?.close();
    t = null;
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  describe('when the console is built', () => {
    beforeEach(async () => {
      fs.writeFileSync(path.join(scratch, 'index.html'), INDEX);
      fs.writeFileSync(path.join(scratch, 'app.js'), APP);
      fs.writeFileSync(path.join(scratch, 'app.css'), 'body{}');
      fs.writeFileSync(path.join(scratch, 'secret.txt'), 'not for the web');
      t = await startTestHarness({ consoleDir: scratch });
    });

    it('answers the page at / with a strict content security policy, and its assets with their types', async () => {
      const page = await fetch(`${t!.url}/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toBe(INDEX);
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page.headers.get('content-security-policy')).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
      expect(CONSOLE_CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
      expect(CONSOLE_CONTENT_SECURITY_POLICY).not.toContain('unsafe-inline');
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(page.headers.get('x-frame-options')).toBe('DENY');

      const script = await fetch(`${t!.url}/app.js?v=2`);
      expect([script.status, script.headers.get('content-type'), await script.text()]).toEqual([200, 'text/javascript; charset=utf-8', APP]);
      expect(script.headers.get('x-content-type-options')).toBe('nosniff');
      const styles = await fetch(`${t!.url}/app.css`);
      expect([styles.status, styles.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
    });

    it('answers an unchanged file with 304, and HEAD without a body', async () => {
      const first = await fetch(`${t!.url}/app.js`);
      const etag = first.headers.get('etag');
      expect(etag).toMatch(/^".+"$/);
      const again = await fetch(`${t!.url}/app.js`, { headers: { 'if-none-match': etag! } });
      expect(again.status).toBe(304);
      const head = await fetch(`${t!.url}/`, { method: 'HEAD' });
      expect([head.status, head.headers.get('content-length'), await head.text()]).toEqual([200, String(Buffer.byteLength(INDEX)), '']);
    });

    it('serves no other file of its folder, and leaves the API, the health check and other methods alone', async () => {
      expect((await fetch(`${t!.url}/secret.txt`)).status).toBe(404);
      expect((await fetch(`${t!.url}/%2e%2e/package.json`)).status).toBe(404);
      expect((await fetch(`${t!.url}/app.js/`)).status).toBe(404);
      expect((await fetch(`${t!.url}/`, { method: 'POST' })).status).toBe(404);
      expect((await fetch(`${t!.url}/health`)).status).toBe(200);
      expect((await t!.anonymous.get('/api/sessions')).status).toBe(401);
      expect((await t!.userA.get('/api/sessions')).status).toBe(200);
    });
  });

  it('says how to build the console when it was not built, and the server works on', async () => {
    t = await startTestHarness({ consoleDir: path.join(scratch, 'missing') });
    const page = await fetch(`${t.url}/`);
    expect([page.status, page.headers.get('content-type'), await page.text()]).toEqual([404, 'text/plain; charset=utf-8', CONSOLE_NOT_BUILT]);
    expect(CONSOLE_NOT_BUILT).toContain('npm run build');
    expect((await fetch(`${t.url}/app.js`)).status).toBe(404);
    expect((await t.userA.get('/api/sessions')).status).toBe(200);
  });
});
