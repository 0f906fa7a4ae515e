import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { Lakehouse } from '../../src/index.ts';
import type { Catalog } from '../../src/catalog/catalog.ts';
import { icebergRestPlugin } from '../../src/server/iceberg-rest/plugin.ts';
import type { RouteAuthConfig, Scope, TokenService } from '../../src/server/auth-types.ts';
import { tempDir } from '../helpers.ts';

/**
 * The Iceberg REST plugin on its own Fastify instance, listening on a free loopback port, over a
 * lakehouse in a temporary warehouse. Every response is recorded with its route, so a test can
 * check each one against the OpenAPI document (`conformance`).
 */

export const OPENAPI_PATH = join(import.meta.dirname, '../../../shared/reference/iceberg-rest-catalog-open-api.yaml');

/** Tokens held in memory: what the server's token store answers, for the routes' scopes. */
export class MemoryTokens implements TokenService {
  readonly clients = new Map<string, { secret: string; scope: Scope }>();
  readonly access = new Map<string, { scope: Scope; expiresAtMs: number }>();
  exchanges = 0;
  constructor(private readonly lifetimeSeconds = 3600) {}

  /** A long-lived token of `scope` (as `twinlake token create` prints one). */
  add(name: string, scope: Scope): string {
    const secret = `tl_${randomBytes(12).toString('hex')}`;
    this.clients.set(name, { secret, scope });
    return secret;
  }

  async verify(token: string): Promise<Scope | undefined> {
    for (const c of this.clients.values()) if (c.secret === token) return c.scope;
    const a = this.access.get(token);
    return a && a.expiresAtMs > Date.now() ? a.scope : undefined;
  }

  async exchange(clientId: string, clientSecret: string) {
    const c = this.clients.get(clientId);
    if (!c || c.secret !== clientSecret) return undefined;
    this.exchanges++;
    const accessToken = `at_${randomBytes(12).toString('hex')}`;
    this.access.set(accessToken, { scope: c.scope, expiresAtMs: Date.now() + this.lifetimeSeconds * 1000 });
    return { accessToken, expiresIn: this.lifetimeSeconds, scope: c.scope };
  }

  /** Every access token issued so far stops working (a restart of the token store). */
  expireAll(): void {
    this.access.clear();
  }
}

const RANK: Record<Scope, number> = { read: 0, write: 1, admin: 2 };

/** The check the server app's hook makes (auth-types.ts): a bearer token whose scope covers the route's. */
function authHook(app: FastifyInstance, tokens: TokenService): void {
  app.addHook('onRequest', async (req, reply) => {
    const config = req.routeOptions.config as RouteAuthConfig;
    if (config.public) return;
    const header = req.headers.authorization ?? '';
    const scope = header.startsWith('Bearer ') ? await tokens.verify(header.slice(7)) : undefined;
    const deny = (code: number, type: string, message: string) =>
      reply.code(code).header('content-type', 'application/json').send(JSON.stringify({ error: { message, type, code } }));
    if (!scope) return deny(401, 'NotAuthorizedException', 'auth: a valid bearer token is required');
    if (!config.scope || RANK[scope] < RANK[config.scope]) return deny(403, 'ForbiddenException', `auth: the route needs scope ${config.scope ?? 'admin'}, the token has ${scope}`);
  });
}

export interface Recorded {
  method: string;
  route: string;
  status: number;
  body: string;
}

export interface RestServer {
  url: string;
  /** The catalog's base URI (`…/iceberg`). */
  base: string;
  lake: Lakehouse;
  warehouse: string;
  tokens: MemoryTokens;
  /** A token of each scope. */
  token: Record<Scope, string>;
  responses: Recorded[];
  app: FastifyInstance;
  close(): Promise<void>;
}

export async function startRestServer(opts: { tokenLifetimeSeconds?: number; wrapCatalog?: (inner: Catalog) => Catalog } = {}): Promise<RestServer> {
  const dir = tempDir('twinlake-rest-');
  const owner = await Lakehouse.open({ warehouse: dir.path, onWarning: () => undefined });
  // A wrapped catalog (one that fails on purpose) is served by a lakehouse over it; the owner closes the catalog.
  const lake = opts.wrapCatalog ? await Lakehouse.open({ warehouse: dir.path, catalog: opts.wrapCatalog(owner.catalog), onWarning: () => undefined }) : owner;
  const tokens = new MemoryTokens(opts.tokenLifetimeSeconds);
  const token = { read: tokens.add('reader', 'read'), write: tokens.add('writer', 'write'), admin: tokens.add('admin', 'admin') };
  const app = Fastify({ logger: false });
  const responses: Recorded[] = [];
  app.addHook('onSend', async (req, reply, payload) => {
    responses.push({ method: req.method, route: req.routeOptions.url ?? req.url, status: reply.statusCode, body: typeof payload === 'string' ? payload : payload === null || payload === undefined ? '' : String(payload) });
    return payload;
  });
  authHook(app, tokens);
  await app.register(icebergRestPlugin, { prefix: '/iceberg', lake, tokens });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url,
    base: `${url}/iceberg`,
    lake,
    warehouse: dir.path,
    tokens,
    token,
    responses,
    app,
    async close() {
      await app.close();
      if (lake !== owner) await lake.close();
      await owner.close();
      dir.cleanup();
    },
  };
}

type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, Record<string, any>> };

/** Validates recorded responses against the OpenAPI document's response schemas. */
export class OpenApiResponses {
  private readonly doc: Doc;
  private readonly ajv: Ajv2020;
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(path = OPENAPI_PATH) {
    this.doc = parseYaml(readFileSync(path, 'utf8')) as Doc;
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(this.ajv);
    // The component schemas under one id, so their `#/components/...` references resolve.
    this.ajv.addSchema({ $id: 'iceberg-rest', components: this.doc.components });
  }

  /** Problems with one response: an undocumented status, a body where none is documented, or a body that does not match. */
  problems(r: Recorded): string[] {
    const path = r.route
      .replace(/^\/iceberg/, '')
      .replace(/:([A-Za-z]+)/g, '{$1}')
      .replace(/^\/v1\/(?!\{prefix\}|config|oauth)/, '/v1/{prefix}/');
    const op = this.doc.paths[path]?.[r.method.toLowerCase() === 'head' ? 'head' : r.method.toLowerCase()];
    const where = `${r.method} ${path} ${r.status}`;
    if (!op) return [`${where}: no such operation in the document`];
    let response = op.responses[String(r.status)] ?? op.responses[`${String(r.status)[0]}XX`] ?? op.responses.default;
    if (!response) return [`${where}: status not documented for this operation`];
    let ref: string | undefined;
    while (response.$ref) {
      ref = response.$ref as string;
      response = this.doc.components.responses![ref.split('/').pop()!];
    }
    // A HEAD answer never has a body (RFC 9110 §9.3.2): its status is what the document says.
    if (r.method === 'HEAD') return r.body === '' ? [] : [`${where}: a body in a HEAD answer`];
    let schema = response.content?.['application/json']?.schema;
    let body = r.body === '' ? undefined : JSON.parse(r.body);
    // The document's 406 response gives ErrorModel as its schema but shows (as every other error
    // response has) the model wrapped in "error": the wrapped form is sent, its inside validated.
    const example = response.content?.['application/json']?.example;
    if (schema?.$ref === '#/components/schemas/ErrorModel' && example && 'error' in example) {
      schema = { type: 'object', required: ['error'], properties: { error: schema } };
    }
    if (!schema) return r.body === '' ? [] : [`${where}: a body where the document has none: ${r.body.slice(0, 200)}`];
    if (r.body === '') return [`${where}: no body where the document has one`];
    const key = JSON.stringify(schema);
    let validate = this.compiled.get(key);
    if (!validate) {
      const rewritten = JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"iceberg-rest#/components/'));
      validate = this.ajv.compile(rewritten);
      this.compiled.set(key, validate);
    }
    if (validate(body)) return [];
    return [`${where}${ref ? ` (${ref})` : ''}: ${this.ajv.errorsText(validate.errors, { separator: '; ' }).slice(0, 600)} in ${r.body.slice(0, 300)}`];
  }
}
