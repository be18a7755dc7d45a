import { HttpClient } from './support/http-client';
import { startTestHarness, TOKEN_A, type TestHarness } from './support/test-harness';

/** The parts of an OpenAPI 3 document these tests read. */
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, { type: string; scheme?: string }> };
  security?: Array<Record<string, string[]>>;
}

interface Operation {
  operationId: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Record<string, unknown> }>;
  requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
  responses: Record<string, { content?: Record<string, { schema: Record<string, unknown> }> }>;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** `METHOD /path/{param}` for every route the Express router of the running server holds. */
function registeredRoutes(t: TestHarness): string[] {
  const express = t.harness.app.getHttpAdapter().getInstance() as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } };
  return express.router.stack.flatMap((layer) =>
    layer.route
      ? Object.keys(layer.route.methods)
          .filter((method) => layer.route?.methods[method])
          .map((method) => `${method.toUpperCase()} ${layer.route?.path.replace(/:(\w+)/g, '{$1}')}`)
      : [],
  );
}

/** `METHOD /path/{param}` for every operation of the document. */
function documentedRoutes(document: OpenApiDocument): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => HTTP_METHODS.has(method))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
}

/** Routes that exist but are not documented, and documented routes that do not exist. */
function compare(registered: string[], documented: string[]): { undocumented: string[]; unknown: string[] } {
  return {
    undocumented: registered.filter((route) => !documented.includes(route)).sort(),
    unknown: documented.filter((route) => !registered.includes(route)).sort(),
  };
}

/** Every `$ref` anywhere in `value`. */
function refs(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refs);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) => (key === '$ref' && typeof inner === 'string' ? [inner] : refs(inner)));
}

describe('GET /api/openapi.json', () => {
  let t: TestHarness;
  let document: OpenApiDocument;

  beforeAll(async () => {
    t = await startTestHarness();
    const answer = await t.anonymous.get<OpenApiDocument>('/api/openapi.json');
    expect(answer.status).toBe(200);
    document = answer.body;
  });

  afterAll(async () => {
    await t.close();
  });

  it('is served as JSON without a token, and the same with one', async () => {
    const response = await fetch(`${t.url}/api/openapi.json`);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const withToken = await t.userA.get('/api/openapi.json');
    expect(withToken.status).toBe(200);
    expect(withToken.body).toEqual(document);
    // Answered before Nest's routing: an unknown token is not looked at either.
    expect((await new HttpClient(t.url, `${TOKEN_A}-wrong`).get('/api/openapi.json')).status).toBe(200);
  });

  it('is an OpenAPI 3 document whose references all resolve and whose path parameters are all declared', () => {
    expect(document.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(document.info).toEqual(expect.objectContaining({ title: 'Harness', version: expect.any(String) }));
    expect(Object.keys(document.paths).length).toBeGreaterThan(0);
    for (const ref of refs(document)) {
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect([ref, document.components.schemas[ref.slice('#/components/schemas/'.length)]]).toEqual([ref, expect.any(Object)]);
    }
    for (const [path, item] of Object.entries(document.paths)) {
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
      for (const [method, operation] of Object.entries(item)) {
        const declared = (operation.parameters ?? []).filter((parameter) => parameter.in === 'path');
        expect([method, path, declared.map((parameter) => parameter.name).sort()]).toEqual([method, path, inPath]);
        expect(declared.every((parameter) => parameter.required === true)).toBe(true);
        expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
      }
    }
    const operationIds = documentedRoutes(document).map((route) => {
      const [method, path] = route.split(' ');
      return document.paths[path][method.toLowerCase()].operationId;
    });
    expect(new Set(operationIds).size).toBe(operationIds.length);
  });

  it('documents exactly the routes the server has', () => {
    const registered = registeredRoutes(t);
    expect(registered).toEqual(expect.arrayContaining(['GET /health', 'GET /api/sessions', 'DELETE /api/sessions/{id}', 'GET /api/openapi.json']));
    expect(compare(registered, documentedRoutes(document))).toEqual({ undocumented: [], unknown: [] });
  });

  it('would name a route the document lacked', () => {
    const { ['/api/sessions/{id}']: _dropped, ...paths } = document.paths;
    expect(compare(registeredRoutes(t), documentedRoutes({ ...document, paths }))).toEqual({
      undocumented: ['DELETE /api/sessions/{id}', 'GET /api/sessions/{id}', 'PATCH /api/sessions/{id}'],
      unknown: [],
    });
  });

  it('asks for the bearer token exactly where the server does', async () => {
    expect(document.components.securitySchemes.bearer).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));
    expect(document.security).toEqual([{ bearer: [] }]);
    for (const route of documentedRoutes(document)) {
      const [method, path] = route.split(' ');
      const operation = document.paths[path][method.toLowerCase()];
      const needsToken = (operation.security ?? document.security ?? []).length > 0;
      const answer = await new HttpClient(t.url, null).request(method, path.replace(/\{\w+\}/g, '1'));
      expect([route, answer.status === 401]).toEqual([route, needsToken]);
      if (needsToken) expect(Object.keys(operation.responses)).toContain('401');
    }
    expect(document.paths['/health'].get.security).toEqual([]);
  });

  it('describes the listing and the deletion of sessions', () => {
    const list = document.paths['/api/sessions'].get;
    expect(list.parameters?.map((parameter) => [parameter.name, parameter.in, parameter.required, parameter.schema])).toEqual([
      ['limit', 'query', false, expect.objectContaining({ type: 'integer', minimum: 1, maximum: 100, default: 20 })],
      ['before', 'query', false, expect.objectContaining({ type: 'integer', minimum: 1 })],
    ]);
    expect(list.responses['200'].content?.['application/json'].schema).toEqual({ $ref: '#/components/schemas/SessionPageView' });
    expect(document.components.schemas.SessionPageView).toEqual(
      expect.objectContaining({
        required: ['sessions', 'next'],
        properties: expect.objectContaining({ next: expect.objectContaining({ type: 'integer', nullable: true }) }),
      }),
    );
    expect(document.components.schemas.SessionListItemView).toEqual(
      expect.objectContaining({ properties: expect.objectContaining({ activeRun: { type: 'boolean', description: expect.any(String) } }) }),
    );
    expect(Object.keys(document.paths['/api/sessions/{id}'].delete.responses).sort()).toEqual(['204', '401', '404', '409']);
  });

  it('describes request bodies from the DTOs, with their enums', () => {
    const create = document.paths['/api/sessions'].post;
    expect(create.requestBody?.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CreateSessionDto' });
    expect(document.components.schemas.CreateSessionDto).toEqual(
      expect.objectContaining({
        required: ['executionMode', 'permissionLevel'],
        properties: expect.objectContaining({
          executionMode: expect.objectContaining({ enum: ['CLOUD', 'LOCAL'] }),
          permissionLevel: expect.objectContaining({ enum: ['READ_ONLY', 'READ_WRITE', 'SMART', 'FULL'] }),
          tools: expect.objectContaining({ type: 'array', items: { type: 'string' } }),
        }),
      }),
    );
  });
});
