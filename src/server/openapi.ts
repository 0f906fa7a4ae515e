import type { RouteAuthConfig } from './auth-types.ts';

/** A registered route as the route table holds it. */
export interface RouteEntry {
  method: string;
  url: string;
  schema?: Record<string, unknown> & { body?: unknown; querystring?: unknown; params?: unknown; response?: Record<string, unknown>; summary?: string; description?: string; consumes?: string[] };
  config?: RouteAuthConfig;
}

interface ObjectSchema {
  type?: string;
  properties?: Record<string, Record<string, unknown>>;
  required?: string[];
}

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: { type: 'object', required: ['message', 'type', 'code'], properties: { message: { type: 'string' }, type: { type: 'string' }, code: { type: 'integer' } } },
  },
};

function parameters(where: 'path' | 'query', schema: unknown): unknown[] {
  const s = schema as ObjectSchema | undefined;
  return Object.entries(s?.properties ?? {}).map(([name, p]) => ({
    name,
    in: where,
    required: where === 'path' || (s?.required ?? []).includes(name),
    ...(typeof p.description === 'string' ? { description: p.description } : {}),
    schema: p,
  }));
}

/**
 * The OpenAPI 3.1 document of the routes, generated from the very schemas that validate their
 * requests: the document and the validation cannot disagree.
 */
export function openApiDocument(routes: readonly RouteEntry[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    if (r.method === 'HEAD' || r.method === 'OPTIONS') continue;
    const path = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const s = r.schema ?? {};
    const op: Record<string, unknown> = {
      operationId: `${r.method.toLowerCase()}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
      ...(s.summary ? { summary: s.summary } : {}),
      ...(s.description ? { description: s.description } : {}),
      parameters: [...parameters('path', s.params), ...parameters('query', s.querystring)],
      responses: {
        ...Object.fromEntries(Object.entries(s.response ?? { 200: { description: 'success' } }).map(([code, schema]) => [code, { description: (schema as { description?: string }).description ?? 'success', content: { 'application/json': { schema } } }])),
        '4XX': { description: 'the request was refused', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        '5XX': { description: 'the server failed', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
      security: r.config?.public ? [] : [{ bearer: [] }],
      'x-twinlake-scope': r.config?.public ? 'public' : (r.config?.scope ?? 'none'),
    };
    if (s.body) op.requestBody = { required: true, content: { 'application/json': { schema: s.body } } };
    else if (s.consumes) op.requestBody = { required: true, content: Object.fromEntries(s.consumes.map((c) => [c, { schema: {} }])) };
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Twinlake management API', version },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'a token from `twinlake token create` (scopes: read ⊂ write ⊂ admin)' } },
      schemas: { Error: ERROR_SCHEMA },
    },
    paths,
  };
}

interface AjvError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
  data?: unknown;
}

const PART: Record<string, string> = { body: 'request body', querystring: 'query', params: 'path', headers: 'headers' };

/** A validation failure in one line naming the field: `request body: tableName is required`. */
export function formatSchemaErrors(errors: AjvError[], dataVar: string): Error {
  const e = errors[0]!;
  const where = PART[dataVar] ?? dataVar;
  const field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  let text: string;
  if (e.keyword === 'required') text = `${[field, e.params.missingProperty].filter(Boolean).join('.')} is required`;
  else if (e.keyword === 'additionalProperties') text = `unknown field ${[field, e.params.additionalProperty].filter(Boolean).join('.')}`;
  else if (e.keyword === 'enum') text = `${field} must be one of ${(e.params.allowedValues as unknown[]).join(', ')}, found ${JSON.stringify(e.data)}`;
  else text = `${field || 'the value'} ${e.message ?? 'is not valid'}${e.data !== undefined && typeof e.data !== 'object' ? `, found ${JSON.stringify(e.data)}` : ''}`;
  const error = new Error(`${where}: ${text}`) as Error & { statusCode: number };
  error.statusCode = 400;
  return error;
}
