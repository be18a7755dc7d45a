import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, getSchemaPath, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { BEARER_AUTH, PUBLIC_OPERATION_EXTENSION } from './auth.guard';
import { ErrorView } from './dto/error.view';

/** Where the server answers its OpenAPI document: no token needed, like `GET /health`. */
export const OPENAPI_DOCUMENT_PATH = '/api/openapi.json';

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type PathItemObject = OpenAPIObject['paths'][string];
type OperationObject = NonNullable<PathItemObject['get']>;

/**
 * The OpenAPI 3 document of the HTTP API, generated from the controllers and their DTOs. Like
 * the bearer guard, it asks for the token on every operation except those marked `@Public()`;
 * every other operation also lists its `401`. It describes its own route too, so that it names
 * every route the server has.
 */
export function createOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Harness')
    .setDescription(
      'Runs LLM agents and their tools. Runs stream over the WebSocket `/ws?token=<token>`, which this document does not describe ' +
        '(see docs/interface.md). Error answers are `{"statusCode", "message"}`; for bad input the message names the field.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'opaque', description: 'A token of `HARNESS_TOKENS`.' }, BEARER_AUTH)
    .addSecurityRequirements(BEARER_AUTH)
    .build();
  const document = SwaggerModule.createDocument(app, config, { extraModels: [ErrorView] });
  for (const operation of operations(document)) {
    const mark = (operation as { [PUBLIC_OPERATION_EXTENSION]?: unknown })[PUBLIC_OPERATION_EXTENSION];
    if (mark === true) {
      Reflect.deleteProperty(operation, PUBLIC_OPERATION_EXTENSION);
      operation.security = [];
    } else {
      operation.responses['401'] ??= { description: 'No valid bearer token.', content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorView) } } } };
    }
  }
  document.paths[OPENAPI_DOCUMENT_PATH] = {
    get: {
      operationId: 'openApiDocument',
      summary: 'This document',
      tags: ['openapi'],
      security: [],
      responses: { '200': { description: 'The OpenAPI document of the HTTP API.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  };
  return document;
}

/**
 * Serves the document at {@link OPENAPI_DOCUMENT_PATH} (JSON only, no UI) through
 * `SwaggerModule`, which answers it before Nest's routing: the bearer guard never sees the
 * request. The document is built on the first request and kept (building it takes tens of
 * milliseconds, which every server start, tests included, would otherwise pay).
 */
export function serveOpenApiDocument(app: INestApplication): void {
  SwaggerModule.setup(OPENAPI_DOCUMENT_PATH, app, () => createOpenApiDocument(app), { ui: false, raw: ['json'], jsonDocumentUrl: OPENAPI_DOCUMENT_PATH });
}

function operations(document: OpenAPIObject): OperationObject[] {
  return Object.values(document.paths).flatMap((item: PathItemObject) =>
    HTTP_METHODS.map((method) => item[method]).filter((operation): operation is OperationObject => operation !== undefined),
  );
}
