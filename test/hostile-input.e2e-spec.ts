import * as http from 'node:http';
import * as net from 'node:net';
import { performance } from 'node:perf_hooks';
import * as zlib from 'node:zlib';
import { MAX_JSON_ARRAY_ITEMS, MAX_JSON_DEPTH, MAX_JSON_KEYS } from '../src/session/http/json-body-limits';
import { createSession, startTestHarness, TOKEN_A, type TestHarness } from './support/test-harness';

/** A request sent byte for byte as given: no content type or encoding added, no body re-encoded. */
interface RawRequest {
  method?: string;
  path: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** `null` sends no Authorization header. */
  token?: string | null;
}

interface RawAnswer {
  status: number;
  message: unknown;
  /** From the first byte sent to the last byte of the answer. */
  elapsedMs: number;
}

function send(baseUrl: string, request: RawRequest): Promise<RawAnswer> {
  const { method = 'POST', path, body, headers = {}, token = TOKEN_A } = request;
  const allHeaders: Record<string, string> = { ...headers };
  if (token !== null) allHeaders.authorization = `Bearer ${token}`;
  if (body !== undefined) allHeaders['content-length'] = String(Buffer.byteLength(body));
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const outgoing = http.request(`${baseUrl}${path}`, { method, headers: allHeaders, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let message: unknown;
        try {
          message = (JSON.parse(text) as { message?: unknown }).message;
        } catch {
          message = text;
        }
        resolve({ status: response.statusCode ?? 0, message, elapsedMs: performance.now() - started });
      });
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

const json = { 'content-type': 'application/json' };
const validSession = { executionMode: 'CLOUD', permissionLevel: 'READ_WRITE' };

/** `{"k0":0,"k1":0,...}`: about 11 bytes a key, so 160,000 keys make 1.8 MB, far under the byte limit. */
function manyKeys(count: number): string {
  const members: string[] = [];
  for (let i = 0; i < count; i += 1) members.push(`"k${i}":0`);
  return `{${members.join(',')}}`;
}

/** A session body whose `tools` field holds `levels` nested arrays. */
function deepTools(levels: number): string {
  return `{"executionMode":"CLOUD","permissionLevel":"READ_WRITE","tools":${'['.repeat(levels)}${']'.repeat(levels)}}`;
}

/** Well under the time class-transformer took on these bodies (seconds), well over a real 4xx (milliseconds). */
const QUICK_MS = 500;

describe('hostile HTTP input', () => {
  let t: TestHarness;

  beforeEach(async () => {
    t = await startTestHarness();
  });

  afterEach(async () => {
    await t.close();
  });

  /** Sends as user 1 and again without a token: a body refused by the parser is refused before authentication. */
  async function expectRefusedWithAndWithoutToken(request: RawRequest, status: number, text: string): Promise<void> {
    for (const token of [TOKEN_A, null]) {
      const answer = await send(t.url, { ...request, token });
      expect({ token, status: answer.status, message: answer.message }).toEqual({ token, status, message: expect.stringContaining(text) });
      expect(answer.elapsedMs).toBeLessThan(QUICK_MS);
    }
  }

  /** Nothing was written: the next session gets the next id. */
  async function expectNoSessionCreatedSince(firstId: number): Promise<void> {
    expect((await createSession(t.userA, validSession)).id).toBe(firstId + 1);
  }

  describe('when a body has too many keys', () => {
    it.each([80_000, 160_000])('answers %i unknown keys with a quick 400 naming the key limit', async (count) => {
      const first = await createSession(t.userA, validSession);
      const body = manyKeys(count);
      await expectRefusedWithAndWithoutToken({ path: '/api/sessions', body, headers: json }, 400, `more than ${MAX_JSON_KEYS} object keys`);
      await expectNoSessionCreatedSince(first.id);
    });

    it('keeps answering GET /health, most probes within 100 ms, while several such bodies are being refused', async () => {
      // encoded once, so that the client (in this same process) spends little of the time measured
      const body = Buffer.from(manyKeys(160_000));
      expect(body.length).toBeGreaterThan(1_700_000);
      // Warm up first: the first request of a fresh server runs code not yet compiled, which is
      // not what is measured here.
      expect((await send(t.url, { path: '/api/sessions', body, headers: json })).status).toBe(400);
      expect((await send(t.url, { method: 'GET', path: '/health', token: null })).status).toBe(200);
      let inFlight = true;
      const hostile = Promise.all(Array.from({ length: 4 }, () => send(t.url, { path: '/api/sessions', body, headers: json }))).finally(() => {
        inFlight = false;
      });
      const healthLatencies: number[] = [];
      while (inFlight) {
        const answer = await send(t.url, { method: 'GET', path: '/health', token: null });
        expect(answer.status).toBe(200);
        healthLatencies.push(answer.elapsedMs);
      }
      const answers = await hostile;
      expect(answers.map((answer) => answer.status)).toEqual([400, 400, 400, 400]);
      // The first probe left in the same tick as the four bodies, so at least one was measured under load.
      // A server that parsed such bodies whole would hold most probes for as long as it parses; one
      // probe that the machine itself stalled (the suite's other workers share its cores) says nothing.
      const sorted = [...healthLatencies].sort((a, b) => a - b);
      expect(sorted[Math.floor(sorted.length / 2)]).toBeLessThan(100);
      expect(sorted[sorted.length - 1]).toBeLessThan(1_000);
    });

    it('still accepts a body at the key limit, leaving the unknown fields to validation', async () => {
      // MAX_JSON_KEYS keys in all: the two a session needs plus unknown ones
      const members = Object.fromEntries(Array.from({ length: MAX_JSON_KEYS - 2 }, (_, i) => [`k${i}`, 0]));
      const answer = await send(t.url, { path: '/api/sessions', body: JSON.stringify({ ...validSession, ...members }), headers: json });
      expect(answer.status).toBe(400);
      expect(answer.message).toContain('property k0 should not exist');
      expect(answer.message).not.toContain('object keys');
    });
  });

  describe('when a body is nested deeply', () => {
    it.each([10_000, 1_000_000, MAX_JSON_DEPTH])('answers %i levels inside a field with a quick 400 naming the depth limit', async (levels) => {
      // `tools` itself sits one level down, inside the top-level object
      await expectRefusedWithAndWithoutToken(
        { path: '/api/sessions', body: deepTools(levels), headers: json },
        400,
        `nested deeper than ${MAX_JSON_DEPTH} levels`,
      );
    });

    it('answers a top-level array nested 100,000 levels with a 400 naming the depth limit', async () => {
      const body = '['.repeat(100_000) + ']'.repeat(100_000);
      await expectRefusedWithAndWithoutToken({ path: '/api/sessions', body, headers: json }, 400, 'nested deeper than');
    });

    it('leaves a body at the depth limit to validation', async () => {
      const answer = await send(t.url, { path: '/api/sessions', body: deepTools(MAX_JSON_DEPTH - 1), headers: json });
      expect(answer.status).toBe(400);
      expect(answer.message).toContain('tools');
      expect(answer.message).not.toContain('nested deeper');
    });
  });

  describe('when a body has too many array items', () => {
    it('answers them with a quick 400 naming the array item limit', async () => {
      const body = JSON.stringify({ ...validSession, mcpServers: new Array(1_000_000).fill(1) });
      await expectRefusedWithAndWithoutToken({ path: '/api/sessions', body, headers: json }, 400, `more than ${MAX_JSON_ARRAY_ITEMS} array items`);
    });
  });

  describe('when a body holds a key that could reach a prototype', () => {
    const cases: Array<[string, string, string]> = [
      ['__proto__ at the top level', `{"executionMode":"CLOUD","permissionLevel":"FULL","__proto__":{"admin":true}}`, '"__proto__"'],
      ['constructor at the top level', `{"executionMode":"CLOUD","permissionLevel":"FULL","constructor":{"prototype":{}}}`, '"constructor"'],
      ['prototype inside an array item', `{"executionMode":"CLOUD","permissionLevel":"FULL","tools":[{"prototype":1}]}`, '"prototype" is not allowed (at tools[0])'],
      ['__proto__ spelled with escapes', `{"executionMode":"CLOUD","permissionLevel":"FULL","\\u005f_proto__":{}}`, '"__proto__"'],
    ];

    it.each(cases)('answers %s with a 400 naming the key and creates nothing', async (_label, body, text) => {
      const first = await createSession(t.userA, validSession);
      await expectRefusedWithAndWithoutToken({ path: '/api/sessions', body, headers: json }, 400, text);
      await expectNoSessionCreatedSince(first.id);
    });
  });

  describe('when a body is compressed', () => {
    const encoded = (encoding: string, body: Buffer): RawRequest => ({
      path: '/api/sessions',
      body,
      headers: { ...json, 'content-encoding': encoding },
    });

    it.each([
      ['gzip', Buffer.from('this is not gzip data')],
      ['deflate', Buffer.from('this is not deflate data')],
      ['br', Buffer.from('this is not brotli data, not at all')],
      ['gzip', zlib.gzipSync(JSON.stringify(validSession)).subarray(0, 12)],
    ])('answers a %s body that does not decompress with a 400 saying so', async (encoding, body) => {
      await expectRefusedWithAndWithoutToken(encoded(encoding, body), 400, `body: could not be decompressed (${encoding}`);
    });

    it('answers an encoding it does not know with a 415', async () => {
      await expectRefusedWithAndWithoutToken(encoded('compress', Buffer.from('abc')), 415, 'unsupported content encoding "compress"');
    });

    it('answers a body that decompresses beyond the byte limit with a quick 413', async () => {
      const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, ' '));
      expect(bomb.length).toBeLessThan(200_000);
      await expectRefusedWithAndWithoutToken(encoded('gzip', bomb), 413, 'body: larger than');
    });

    it('accepts a body that decompresses properly', async () => {
      for (const [encoding, compress] of [
        ['gzip', zlib.gzipSync],
        ['deflate', zlib.deflateSync],
        ['br', zlib.brotliCompressSync],
      ] as const) {
        const answer = await send(t.url, encoded(encoding, compress(JSON.stringify(validSession))));
        expect({ encoding, status: answer.status }).toEqual({ encoding, status: 201 });
      }
    });
  });

  describe('when a body is not JSON', () => {
    it.each([
      ['text/plain', { 'content-type': 'text/plain' }],
      ['form data', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['no content type', {}],
    ])('answers %s with a 415 saying the body must be application/json', async (_label, headers) => {
      await expectRefusedWithAndWithoutToken(
        { path: '/api/sessions', body: JSON.stringify(validSession), headers },
        415,
        'body: must be application/json',
      );
    });

    it('answers one still being uploaded once it is all sent, not by closing the connection mid-upload', async () => {
      const half = Buffer.alloc(1024 * 1024, 'x');
      const head = ['POST /api/sessions HTTP/1.1', 'host: harness', 'content-type: text/plain', `content-length: ${2 * half.length}`, 'connection: close'];
      const socket = net.connect(Number(new URL(t.url).port), '127.0.0.1');
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      const closed = new Promise<Error | undefined>((resolve) => {
        socket.on('error', resolve);
        socket.on('close', () => resolve(undefined));
      });
      socket.write(`${head.join('\r\n')}\r\n\r\n`);
      socket.write(half);
      // A server that answers now also closes the connection (`connection: close`): a client
      // still writing gets EPIPE instead of the answer.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(received).toEqual([]);
      socket.end(half);
      expect(await closed).toBeUndefined();
      expect(Buffer.concat(received).toString('latin1')).toMatch(/^HTTP\/1\.1 415 /);
    });

    it('answers JSON in a charset other than UTF-8 with a 415', async () => {
      const body = Buffer.from(JSON.stringify(validSession), 'utf16le');
      await expectRefusedWithAndWithoutToken(
        { path: '/api/sessions', body, headers: { 'content-type': 'application/json; charset=utf-16le' } },
        415,
        'UTF-8',
      );
    });

    it('still takes a POST without a body where the route needs none', async () => {
      const session = await createSession(t.userA, validSession);
      expect((await send(t.url, { path: `/api/sessions/${session.id}/cancel` })).status).toBe(202);
      expect((await send(t.url, { path: `/api/sessions/${session.id}/cancel`, body: '' })).status).toBe(202);
      expect((await send(t.url, { path: `/api/sessions/${session.id}/cancel`, body: '', headers: json })).status).toBe(202);
    });
  });
});
