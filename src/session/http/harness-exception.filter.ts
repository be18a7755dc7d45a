import { Catch, HttpException, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { InvalidSessionInputError, RunAlreadyActiveError, ServerStoppingError, SessionBusyError, SessionNotFoundError } from '../service/session-errors';

interface JsonResponse {
  status(code: number): JsonResponse;
  json(body: unknown): void;
}

/**
 * Maps the session layer's named errors to HTTP answers, and every other failure to a JSON body
 * of interface.md's shape (`{"message": "..."}`), never an HTML page or a stack trace. Request
 * body failures arrive already worded (`body: ...`, see json-body.ts).
 */
@Catch()
export class HarnessExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Http');

  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<JsonResponse>();
    const [status, message] = this.describe(exception);
    response.status(status).json({ statusCode: status, message });
  }

  private describe(exception: unknown): [number, string] {
    if (exception instanceof SessionNotFoundError) return [404, exception.message];
    if (exception instanceof InvalidSessionInputError) return [400, exception.message];
    if (exception instanceof RunAlreadyActiveError) return [409, exception.message];
    if (exception instanceof SessionBusyError) return [409, exception.message];
    if (exception instanceof ServerStoppingError) return [503, exception.message];
    if (exception instanceof HttpException) {
      const body = exception.getResponse();
      const status = exception.getStatus();
      const message = typeof body === 'string' ? body : (body as { message?: unknown }).message;
      const text = Array.isArray(message) ? message.join('; ') : typeof message === 'string' ? message : exception.message;
      return [status, text];
    }
    this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    return [500, 'Internal server error'];
  }
}
