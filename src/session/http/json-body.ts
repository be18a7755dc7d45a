import { HttpException } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { finished } from 'node:stream';
import { findForbiddenKey, findJsonLimitViolation, JSON_BODY_LIMIT } from './json-body-limits';

/** The only media type request bodies may have: every body of interface.md is JSON. */
const JSON_MEDIA_TYPE = 'application/json';

/** What of Express's request the body middlewares use. */
interface BodyRequest extends IncomingMessage {
  body?: unknown;
  /** Express's content-type match (type-is). */
  is(type: string): string | false | null;
}

type Next = (error?: unknown) => void;

/**
 * A body refused by our own checks, shaped like the errors body-parser raises (`status`, `type`)
 * so that one translation ({@link toHttpException}) serves both.
 */
class JsonBodyError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = 'JsonBodyError';
  }
}

/** What body-parser attaches to the errors it raises (malformed JSON, too large, unknown charset, ...). */
interface BodyParserError extends Error {
  type: string;
  status: number;
}

/**
 * Installs the request body handling: a body must be JSON, within {@link JSON_BODY_LIMIT} once
 * decompressed, and within the shape limits of `json-body-limits.ts`, which are checked on the raw
 * bytes before `JSON.parse` (so before any conversion or validation); a parsed body must hold no
 * key that reaches a prototype. All of this runs before routing and authentication, so a refused
 * body is the same 4xx with or without a token, and every failure leaves as an `HttpException`
 * whose message starts with `body:`.
 *
 * The application must be created with `bodyParser: false` (Nest's default parsers would parse
 * first) and without `rawBody` (Nest would replace the `verify` hook that checks the shape).
 */
export function useJsonBody(app: NestExpressApplication): void {
  app.use(requireJsonContentType);
  app.useBodyParser('json', { type: JSON_MEDIA_TYPE, limit: JSON_BODY_LIMIT, verify: checkJsonShape });
  app.use(refuseForbiddenKeys);
  app.use((error: unknown, request: BodyRequest, _response: ServerResponse, next: Next) => next(toHttpException(error, request)));
}

/**
 * A body of another type would skip the parser and reach validation as "no fields", answered
 * with a puzzling "executionMode must be one of ...". A request without a body (a POST to
 * `/cancel`, often sent with `content-length: 0`) needs no type.
 */
function requireJsonContentType(request: BodyRequest, _response: ServerResponse, next: Next): void {
  if (!carriesBody(request) || request.is(JSON_MEDIA_TYPE)) return next();
  const given = request.headers['content-type'];
  const error = new JsonBodyError(415, 'content-type.unsupported', `must be ${JSON_MEDIA_TYPE} (${given ? `got ${given}` : 'no content type given'})`);
  // Read the body off first, as body-parser does before its own errors: answered mid-upload, the
  // client would see its connection reset instead of the answer.
  finished(request, () => next(error));
  request.resume();
}

/** A chunked body may turn out empty, but a client that streams one must say what it is. */
function carriesBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) !== 0);
}

/** body-parser's `verify` hook: runs on the decompressed bytes, before they are decoded and parsed. */
function checkJsonShape(_request: IncomingMessage, _response: ServerResponse, bytes: Buffer, charset: string | null): void {
  // The shape scan reads the bytes as UTF-8, the only encoding RFC 8259 allows between systems.
  if (charset !== 'utf-8') {
    throw new JsonBodyError(415, 'charset.unsupported', `unsupported charset "${String(charset).toUpperCase()}": JSON must be UTF-8`);
  }
  const violation = findJsonLimitViolation(bytes);
  if (violation) throw new JsonBodyError(400, `entity.${violation.limit}.exceeded`, violation.message);
}

function refuseForbiddenKeys(request: BodyRequest, _response: ServerResponse, next: Next): void {
  const found = findForbiddenKey(request.body);
  if (!found) return next();
  next(new JsonBodyError(400, 'entity.key.forbidden', `the key "${found.key}" is not allowed (at ${found.path || 'the top level'})`));
}

/**
 * Turns a failure of the body handling into an `HttpException` naming the body. Nest on its own
 * maps only a malformed body (without saying it is about the body) and answers every other
 * parser failure with a 500.
 */
function toHttpException(error: unknown, request: IncomingMessage): unknown {
  if (isBodyParserError(error)) return new HttpException(`body: ${describe(error)}`, error.status, { cause: error });
  // body-parser passes on a decompression stream's error as it is (zlib's `Z_DATA_ERROR`,
  // brotli's `ERR__ERROR_FORMAT_PADDING_2`, ...), without a `type`.
  const encoding = request.headers['content-encoding'];
  if (error instanceof Error && encoding !== undefined && encoding.toLowerCase() !== 'identity') {
    return new HttpException(`body: could not be decompressed (${encoding}: ${error.message})`, 400, { cause: error });
  }
  return error;
}

function describe(error: BodyParserError): string {
  if (error.type === 'entity.parse.failed') return `not valid JSON (${error.message})`;
  if (error.type === 'entity.too.large') return `larger than ${JSON_BODY_LIMIT} (the size limit)`;
  return error.message;
}

/** True for an error body-parser (or {@link JsonBodyError}) raised about the request: a 4xx it means to expose. */
function isBodyParserError(error: unknown): error is BodyParserError {
  if (!(error instanceof Error)) return false;
  const { type, status } = error as Partial<BodyParserError>;
  return typeof type === 'string' && typeof status === 'number' && status >= 400 && status < 500;
}
