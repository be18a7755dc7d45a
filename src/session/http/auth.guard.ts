import { applyDecorators, createParamDecorator, SetMetadata, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';
import { ApiExtension } from '@nestjs/swagger';
import type { TokenAuthenticator } from '../auth/token-authenticator';

const PUBLIC_ROUTE = 'harness:public';

/** The name of the bearer token's security scheme in the OpenAPI document. */
export const BEARER_AUTH = 'bearer';

/**
 * The OpenAPI extension by which {@link Public} marks its operations: the document requires the
 * bearer token everywhere, as the guard does, and `openapi.ts` turns this mark into the
 * operation's `security: []`. One marker serves both, so the document cannot drift from the guard.
 */
export const PUBLIC_OPERATION_EXTENSION = 'x-harness-public';

/** Marks a route that needs no token (only `GET /health`). */
export const Public = () => applyDecorators(SetMetadata(PUBLIC_ROUTE, true), ApiExtension(PUBLIC_OPERATION_EXTENSION, true));

interface AuthenticatedRequest {
  headers: Record<string, string | string[] | undefined>;
  userId?: number;
}

/** Every HTTP request carries `Authorization: Bearer <token>`; a missing or unknown token is a 401. */
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly authenticator: TokenAuthenticator,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const isPublic = this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const userId = this.authenticator.userForAuthorizationHeader(request.headers.authorization);
    if (userId === undefined) throw new UnauthorizedException('A valid bearer token is required');
    request.userId = userId;
    return true;
  }
}

/** The authenticated user's id (set by `BearerAuthGuard`). */
export const CurrentUser = createParamDecorator((_data: unknown, context: ExecutionContext): number => {
  const userId = context.switchToHttp().getRequest<AuthenticatedRequest>().userId;
  if (userId === undefined) throw new UnauthorizedException('A valid bearer token is required');
  return userId;
});
