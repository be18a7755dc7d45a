import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';

/** A file of the built console and the media type it is served as. */
interface ConsoleAsset {
  file: string;
  mediaType: string;
}

/**
 * The URL paths the console answers, each one file of `dist/console` (`npm run build` writes
 * them). Nothing else is served from that folder, so no request can name a file of its choice.
 */
const CONSOLE_ASSETS: ReadonlyMap<string, ConsoleAsset> = new Map([
  ['/', { file: 'index.html', mediaType: 'text/html; charset=utf-8' }],
  ['/index.html', { file: 'index.html', mediaType: 'text/html; charset=utf-8' }],
  ['/app.js', { file: 'app.js', mediaType: 'text/javascript; charset=utf-8' }],
  ['/app.js.map', { file: 'app.js.map', mediaType: 'application/json; charset=utf-8' }],
  ['/app.css', { file: 'app.css', mediaType: 'text/css; charset=utf-8' }],
  ['/favicon.svg', { file: 'favicon.svg', mediaType: 'image/svg+xml' }],
]);

/**
 * The page's policy: its own script and styles only (no inline script, no CDN), images from
 * itself or from the blob URLs it makes of attachments, connections to its own origin (HTTP and
 * the WebSocket), never framed.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** What `/` answers when the console was not built. */
export const CONSOLE_NOT_BUILT = 'The web console is not built: run `npm run build`, then start the server again.\n';

type Next = (error?: unknown) => void;

/**
 * Serves the web console's static files at `/` from `directory`, before Nest's routing: the
 * shell holds no data, so it needs no token (every API call the page makes carries one). Only
 * the paths of {@link CONSOLE_ASSETS} are answered; `/api/*`, `/ws` and `/health` go on as before.
 * Without a build, `/` answers a plain line saying how to build it.
 */
export function serveConsole(app: NestExpressApplication, directory: string): void {
  app.use((request: IncomingMessage, response: ServerResponse, next: Next) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return next();
    const asset = CONSOLE_ASSETS.get(pathOf(request));
    if (!asset) return next();
    readFile(path.join(directory, asset.file)).then(
      (body) => answer(request, response, asset, body),
      () => answerMissing(request, response, asset),
    );
  });
}

function pathOf(request: IncomingMessage): string {
  const url = request.url ?? '/';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

function answer(request: IncomingMessage, response: ServerResponse, asset: ConsoleAsset, body: Buffer): void {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  setSecurityHeaders(response, asset);
  response.setHeader('content-type', asset.mediaType);
  response.setHeader('cache-control', 'no-cache');
  response.setHeader('etag', etag);
  if (request.headers['if-none-match'] === etag) {
    response.statusCode = 304;
    response.end();
    return;
  }
  response.statusCode = 200;
  response.setHeader('content-length', body.byteLength);
  response.end(request.method === 'HEAD' ? undefined : body);
}

function answerMissing(request: IncomingMessage, response: ServerResponse, asset: ConsoleAsset): void {
  const text = asset.file === 'index.html' ? CONSOLE_NOT_BUILT : `${asset.file} is not built\n`;
  setSecurityHeaders(response, asset);
  response.statusCode = 404;
  response.setHeader('content-type', 'text/plain; charset=utf-8');
  response.setHeader('content-length', Buffer.byteLength(text));
  response.end(request.method === 'HEAD' ? undefined : text);
}

function setSecurityHeaders(response: ServerResponse, asset: ConsoleAsset): void {
  response.setHeader('x-content-type-options', 'nosniff');
  response.setHeader('referrer-policy', 'no-referrer');
  if (asset.file === 'index.html') {
    response.setHeader('content-security-policy', CONSOLE_CONTENT_SECURITY_POLICY);
    response.setHeader('x-frame-options', 'DENY');
    response.setHeader('cross-origin-opener-policy', 'same-origin');
  }
}
