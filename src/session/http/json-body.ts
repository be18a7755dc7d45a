import { HttpException } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';

/** Largest JSON body accepted: a message of the 1,000,000 characters `PostMessageDto` allows fits, escaped. */
export const JSON_BODY_LIMIT = '8mb';

/** What body-parser attaches to the errors it raises (malformed JSON, too large, unknown charset, ...). */
export interface BodyParserError extends Error {
  type: string;
  status: number;
}

/**
 * Parses JSON request bodies (instead of Nest's default parsers) and passes body-parser's failures
 * on as `HttpException`s with the parser error as `cause`. Nest on its own maps only a malformed
 * body, dropping the cause (so the answer cannot say it is about the body), and answers every other
 * parser failure (a body over the size limit, an unknown charset) with a 500.
 * The application must be created with `bodyParser: false`.
 */
export function useJsonBody(app: NestExpressApplication): void {
  app.useBodyParser('json', { limit: JSON_BODY_LIMIT });
  app.use((error: unknown, _request: unknown, _response: unknown, next: (error?: unknown) => void) => {
    next(isBodyParserError(error) ? new HttpException(error.message, error.status, { cause: error }) : error);
  });
}

/** True for an error body-parser raised about the request (a 4xx it means to expose). */
export function isBodyParserError(error: unknown): error is BodyParserError {
  if (!(error instanceof Error)) return false;
  const { type, status } = error as Partial<BodyParserError>;
  return typeof type === 'string' && typeof status === 'number' && status >= 400 && status < 500;
}
