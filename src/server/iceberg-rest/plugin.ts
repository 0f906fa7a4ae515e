import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { invalidInput, isTwinlakeError, notFound } from '../../core/errors.ts';
import { isJsonObject, stringifyJson } from '../../core/json.ts';
import { checkNamespace, checkTableIdentifier, formatTableIdentifier, type Catalog, type TableCommit, type TableIdentifier } from '../../catalog/catalog.ts';
import { decodeNamespace } from '../../catalog/rest-wire.ts';
import { tableMetadataToJson } from '../../format/iceberg/table-metadata.ts';
import type { TableMetadata } from '../../format/iceberg/types.ts';
import { requirementFromJson, updateFromJson } from '../../format/iceberg/updates.ts';
import type { Lakehouse } from '../../table/lakehouse.ts';
import type { RouteAuthConfig, TokenService } from '../auth-types.ts';
import { commitRestTable, commitRestTransaction, createRestTable, newTableFromRequest, restTableContext, TableLocks } from './rest-commit.ts';
import { errorBody, restError, toRestError, type RouteKind } from './rest-errors.ts';
import { relativeTo } from '../../core/uri.ts';
import { HttpError } from '../http-errors.ts';
import { jsonBodyParser, limitError } from '../limits.ts';

declare module 'fastify' {
  interface FastifyContextConfig extends RouteAuthConfig {}
}

export interface IcebergRestOptions {
  lake: Lakehouse;
  /** Exchanges client credentials for access tokens (`POST /v1/oauth/tokens`); without it that route answers 501. */
  tokens?: TokenService;
  /** The mount point, as Fastify's `register` takes it (`/iceberg`); Fastify applies it. */
  prefix?: string;
  /** The `{prefix}` path segment the config hands clients (default: the catalog's name). */
  catalogPrefix?: string;
}

/** Catalog operations beyond the Catalog contract, used when the catalog has them. */
interface CatalogExtras {
  updateNamespaceProperties?(namespace: string[], removals: string[], updates: Record<string, string>): Promise<{ updated: string[]; removed: string[]; missing: string[] }>;
  renameTable?(from: TableIdentifier, to: TableIdentifier): Promise<void>;
}

const PREFIXED = '/v1/:prefix';

/** Every route this plugin serves, for `GET /v1/config`'s `endpoints`. */
const ENDPOINTS = [
  'GET /v1/{prefix}/namespaces',
  'POST /v1/{prefix}/namespaces',
  'GET /v1/{prefix}/namespaces/{namespace}',
  'HEAD /v1/{prefix}/namespaces/{namespace}',
  'DELETE /v1/{prefix}/namespaces/{namespace}',
  'POST /v1/{prefix}/namespaces/{namespace}/properties',
  'GET /v1/{prefix}/namespaces/{namespace}/tables',
  'POST /v1/{prefix}/namespaces/{namespace}/tables',
  'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}',
  'POST /v1/{prefix}/namespaces/{namespace}/register',
  'POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics',
  'POST /v1/{prefix}/tables/rename',
  'POST /v1/{prefix}/transactions/commit',
];

type Params = { prefix: string; namespace: string; table: string };
type Req = FastifyRequest<{ Params: Params; Querystring: Record<string, string | undefined> }>;

/**
 * The Iceberg REST catalog (the OpenAPI document in shared/reference) over the lakehouse's
 * catalog. Reads go to the catalog; every write goes through the one commit path and Delta
 * follows it (rest-commit.ts). Each route declares the scope the server's auth hook checks:
 * reads (and metrics reports) `read`, commits and creates `write`, register, rename and drops `admin`.
 */
export async function icebergRestPlugin(app: FastifyInstance, opts: IcebergRestOptions): Promise<void> {
  const { lake } = opts;
  const catalog = lake.catalog as Catalog & CatalogExtras;
  const catalogPrefix = opts.catalogPrefix ?? catalog.name;
  const locks = new TableLocks();
  const inWarehouse = (uri: unknown, what: string) => checkInWarehouse(lake.warehouse, uri, what);
  const warn = (m: string) => app.log.warn(m);

  // Bodies keep 64-bit snapshot IDs exact; form bodies are the OAuth token request's.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser('request body', { allowEmpty: true }));
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });

  // What fails before a handler runs (a body that is not JSON) gets the spec's error body too.
  app.setErrorHandler((raw: unknown, req, reply) => {
    const e = app.serverLimits ? limitError(raw, app.serverLimits) : raw;
    const status = (e as { statusCode?: number }).statusCode;
    const err = e instanceof HttpError
      ? restError(e.status, e.type, `iceberg rest: ${e.message}`)
      : isTwinlakeError(e)
      ? toRestError(e, 'table')
      : status !== undefined && status >= 400 && status < 500
        ? restError(status, 'BadRequestException', `iceberg rest: ${(e as Error).message}`)
        : restError(500, 'InternalServerError', `iceberg rest: ${(e as Error).message}`);
    if (err.code >= 500) req.log.error({ err: e }, err.message);
    return reply.code(err.code).header('content-type', 'application/json').send(stringifyJson(errorBody(err)));
  });

  const send = (reply: FastifyReply, code: number, body?: unknown) => {
    if (body === undefined) return reply.code(code).send();
    return reply.code(code).header('content-type', 'application/json').send(stringifyJson(body));
  };

  /** A route handler: errors become the spec's error body; `kind` says what a not-found names. */
  const handle =
    (kind: RouteKind, f: (req: Req, reply: FastifyReply) => Promise<unknown>) =>
    async (req: Req, reply: FastifyReply): Promise<unknown> => {
      try {
        if (req.params.prefix !== undefined && req.params.prefix !== catalogPrefix) {
          throw restError(404, 'NoSuchWarehouseException', `iceberg rest: unknown prefix ${JSON.stringify(req.params.prefix)}; GET /v1/config names it (${catalogPrefix})`);
        }
        return await f(req, reply);
      } catch (e) {
        const err = toRestError(e, kind);
        if (err.code >= 500) req.log.error({ err: e }, err.message);
        // HEAD answers carry no body.
        if (req.method === 'HEAD') return send(reply, err.code);
        return send(reply, err.code, errorBody(err));
      }
    };

  const read: { config: RouteAuthConfig } = { config: { scope: 'read' } };
  const write: { config: RouteAuthConfig } = { config: { scope: 'write' } };
  const admin: { config: RouteAuthConfig } = { config: { scope: 'admin' } };

  const namespaceOf = (req: Req): string[] => {
    const ns = decodeNamespace(req.params.namespace);
    checkNamespace(ns);
    return ns;
  };
  const tableOf = (req: Req): TableIdentifier => {
    const id = { namespace: namespaceOf(req), name: req.params.table };
    checkTableIdentifier(id);
    return id;
  };
  const ctxOf = (id: TableIdentifier) => restTableContext(lake, id, warn);
  const loadResult = (metadataLocation: string, metadata: TableMetadata) => ({ 'metadata-location': metadataLocation, metadata: tableMetadataToJson(metadata), config: {} });
  const requireNamespace = async (ns: string[]) => {
    if (!(await catalog.namespaceExists(ns))) throw notFound(`iceberg rest: namespace ${ns.join('.')} does not exist`, { namespace: ns });
  };

  // ---- configuration and tokens -------------------------------------------------------------

  app.get('/v1/config', read, handle('namespace', async (_req, reply) => send(reply, 200, { defaults: {}, overrides: { prefix: catalogPrefix }, endpoints: ENDPOINTS })));

  app.post('/v1/oauth/tokens', { config: { public: true } }, async (req, reply) => {
    const oauthError = (code: number, error: string, description: string) => send(reply, code, { error, error_description: description });
    const body = (isJsonObject(req.body) ? req.body : {}) as Record<string, string>;
    if (!opts.tokens) return oauthError(400, 'unsupported_grant_type', 'iceberg rest: this server issues no tokens; use a bearer token');
    if (body.grant_type !== 'client_credentials') return oauthError(400, 'unsupported_grant_type', `iceberg rest: expected grant_type client_credentials, found ${JSON.stringify(body.grant_type ?? null)}`);
    if (!body.client_id || !body.client_secret) return oauthError(400, 'invalid_request', 'iceberg rest: client_id and client_secret are required');
    const issued = await opts.tokens.exchange(body.client_id, body.client_secret);
    if (!issued) return oauthError(401, 'invalid_client', 'iceberg rest: the client credentials are not valid');
    return send(reply, 200, { access_token: issued.accessToken, token_type: 'bearer', expires_in: issued.expiresIn, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', scope: issued.scope });
  });

  // Each route with the prefix `/v1/config` names, and without one for clients that skip the config.
  for (const base of [PREFIXED, '/v1']) {
    // ---- namespaces ---------------------------------------------------------------------------

    app.get(
      `${base}/namespaces`,
      read,
      handle('namespace', async (req, reply) => {
        const parent = req.query.parent === undefined ? undefined : decodeNamespace(req.query.parent);
        if (parent) checkNamespace(parent);
        const all = await catalog.listNamespaces(parent);
        const page = paginate(all, (ns) => ns.join('\u001f'), req.query);
        return send(reply, 200, { namespaces: page.items, ...(page.next ? { 'next-page-token': page.next } : {}) });
      }),
    );

    app.post(
      `${base}/namespaces`,
      write,
      handle('namespace', async (req, reply) => {
        const body = objectBody(req.body, 'CreateNamespaceRequest');
        const ns = body.namespace as string[];
        if (!Array.isArray(ns)) throw invalidInput('iceberg rest: CreateNamespaceRequest: expected namespace as an array of strings');
        const properties = stringMap(body.properties ?? {}, 'properties');
        await catalog.createNamespace(ns, properties);
        return send(reply, 200, { namespace: ns, properties: await catalog.loadNamespaceProperties(ns) });
      }),
    );

    app.get(
      `${base}/namespaces/:namespace`,
      // HEAD is its own route: existence without loading.
      { ...read, exposeHeadRoute: false },
      handle('namespace', async (req, reply) => {
        const ns = namespaceOf(req);
        return send(reply, 200, { namespace: ns, properties: await catalog.loadNamespaceProperties(ns) });
      }),
    );

    app.head(
      `${base}/namespaces/:namespace`,
      read,
      handle('namespace', async (req, reply) => send(reply, (await catalog.namespaceExists(namespaceOf(req))) ? 204 : 404)),
    );

    app.delete(
      `${base}/namespaces/:namespace`,
      admin,
      handle('namespace', async (req, reply) => {
        const ns = namespaceOf(req);
        try {
          await catalog.dropNamespace(ns);
        } catch (e) {
          // The name was checked above: an invalid-input here is a namespace that still holds something.
          if (isTwinlakeError(e, 'invalid-input')) throw restError(409, 'NamespaceNotEmptyException', e.message);
          throw e;
        }
        return send(reply, 204);
      }),
    );

    app.post(
      `${base}/namespaces/:namespace/properties`,
      write,
      handle('namespace', async (req, reply) => {
        const ns = namespaceOf(req);
        const body = objectBody(req.body, 'UpdateNamespacePropertiesRequest');
        const removals = (body.removals ?? []) as string[];
        const updates = stringMap(body.updates ?? {}, 'updates');
        const both = removals.find((k) => k in updates);
        if (both !== undefined) throw restError(422, 'UnprocessableEntityException', `iceberg rest: property ${JSON.stringify(both)} is both set and removed`);
        await requireNamespace(ns);
        if (!catalog.updateNamespaceProperties) {
          throw restError(406, 'UnsupportedOperationException', `iceberg rest: the ${catalog.name} catalog cannot change namespace properties after creation`);
        }
        return send(reply, 200, await catalog.updateNamespaceProperties(ns, removals, updates));
      }),
    );

    // ---- tables -------------------------------------------------------------------------------

    app.get(
      `${base}/namespaces/:namespace/tables`,
      read,
      handle('namespace', async (req, reply) => {
        const all = await catalog.listTables(namespaceOf(req));
        const page = paginate(all, (t) => t.name, req.query);
        return send(reply, 200, { identifiers: page.items, ...(page.next ? { 'next-page-token': page.next } : {}) });
      }),
    );

    app.post(
      `${base}/namespaces/:namespace/tables`,
      write,
      handle('table', async (req, reply) => {
        const ns = namespaceOf(req);
        const body = objectBody(req.body, 'CreateTableRequest');
        if (typeof body.name !== 'string') throw invalidInput('iceberg rest: CreateTableRequest: expected a string name');
        const id = { namespace: ns, name: body.name };
        checkTableIdentifier(id);
        if (!isJsonObject(body.schema)) throw invalidInput('iceberg rest: CreateTableRequest: expected a schema object');
        await requireNamespace(ns);
        const ctx = ctxOf(id);
        if (typeof body.location === 'string' && body.location !== '') {
          inWarehouse(body.location, 'CreateTableRequest: location');
          // Tables never nest or share a folder (DESIGN.md §10): a table lives in its own.
          if (relativeTo(lake.warehouse, body.location)!.replace(/\/+$/, '') !== relativeTo(lake.warehouse, ctx.location)) {
            throw restError(400, 'BadRequestException', `iceberg rest: CreateTableRequest: location ${JSON.stringify(body.location)} must be this table's folder, ${ctx.location} (tables never nest or share a folder)`);
          }
        }
        const metadata = newTableFromRequest(ctx, {
          name: body.name,
          ...(typeof body.location === 'string' && body.location !== '' ? { location: body.location } : {}),
          schema: body.schema as never,
          ...(isJsonObject(body['partition-spec']) ? { spec: body['partition-spec'] as never } : {}),
          ...(isJsonObject(body['write-order']) ? { order: body['write-order'] as never } : {}),
          properties: stringMap(body.properties ?? {}, 'properties'),
        });
        // A staged create commits nothing: the client's commit with assert-create creates the table.
        if (body['stage-create'] === true) {
          if (await catalog.tableExists(id)) throw restError(409, 'AlreadyExistsException', `iceberg rest: table ${formatTableIdentifier(id)} already exists`);
          return send(reply, 200, { metadata: tableMetadataToJson(metadata), config: {} });
        }
        const created = await createRestTable(ctx, metadata);
        return send(reply, 200, loadResult(created.metadataLocation, created.metadata));
      }),
    );

    app.get(
      `${base}/namespaces/:namespace/tables/:table`,
      // HEAD is its own route: existence without loading.
      { ...read, exposeHeadRoute: false },
      handle('table', async (req, reply) => {
        const id = tableOf(req);
        const loaded = await catalog.loadTable(id);
        const etag = etagOf(loaded.metadataLocation);
        reply.header('etag', etag);
        if (matches(req.headers['if-none-match'], etag)) return send(reply, 304);
        let metadata = loaded.metadata;
        if (req.query.snapshots === 'refs') {
          const referenced = new Set(Object.values(metadata.refs).map((r) => r['snapshot-id']));
          metadata = { ...metadata, snapshots: metadata.snapshots.filter((s) => referenced.has(s['snapshot-id'])) };
        }
        return send(reply, 200, loadResult(loaded.metadataLocation, metadata));
      }),
    );

    app.head(
      `${base}/namespaces/:namespace/tables/:table`,
      read,
      handle('table', async (req, reply) => send(reply, (await catalog.tableExists(tableOf(req))) ? 204 : 404)),
    );

    app.post(
      `${base}/namespaces/:namespace/tables/:table`,
      write,
      handle('commit', async (req, reply) => {
        const id = tableOf(req);
        const commit = commitOf(objectBody(req.body, 'CommitTableRequest'), inWarehouse);
        const result = await commitRestTable(locks, ctxOf(id), commit);
        return send(reply, 200, { 'metadata-location': result.metadataLocation, metadata: tableMetadataToJson(result.metadata) });
      }),
    );

    app.delete(
      `${base}/namespaces/:namespace/tables/:table`,
      admin,
      handle('table', async (req, reply) => {
        const id = tableOf(req);
        const purge = req.query.purgeRequested === 'true';
        await locks.with([id], () => catalog.dropTable(id, { purge }));
        return send(reply, 204);
      }),
    );

    app.post(
      `${base}/namespaces/:namespace/register`,
      admin,
      handle('table', async (req, reply) => {
        const ns = namespaceOf(req);
        const body = objectBody(req.body, 'RegisterTableRequest');
        if (typeof body.name !== 'string' || typeof body['metadata-location'] !== 'string') {
          throw invalidInput('iceberg rest: RegisterTableRequest: expected a string name and metadata-location');
        }
        if (body.overwrite === true) throw restError(406, 'UnsupportedOperationException', 'iceberg rest: register with overwrite is not supported; drop the table first');
        const id = { namespace: ns, name: body.name };
        checkTableIdentifier(id);
        inWarehouse(body['metadata-location'], 'RegisterTableRequest: metadata-location');
        await requireNamespace(ns);
        const registered = await catalog.registerTable(id, body['metadata-location']);
        return send(reply, 200, loadResult(registered.metadataLocation, registered.metadata));
      }),
    );

    app.post(
      `${base}/namespaces/:namespace/tables/:table/metrics`,
      // Readers send scan reports, so a read token may post them; reports are accepted and not kept.
      read,
      handle('table', async (req, reply) => {
        tableOf(req);
        return send(reply, 204);
      }),
    );

    app.post(
      `${base}/tables/rename`,
      admin,
      handle('table', async (req, reply) => {
        const body = objectBody(req.body, 'RenameTableRequest');
        const from = identifierOf(body.source, 'source');
        const to = identifierOf(body.destination, 'destination');
        await locks.with([from, to], async () => {
          const source = await catalog.loadTable(from);
          await requireNamespace(to.namespace);
          if (catalog.renameTable) return catalog.renameTable(from, to);
          // The contract has no rename: the destination is registered on the same metadata file,
          // then the source is unregistered (files kept). Both happen under this server's locks;
          // should the drop fail, the destination is unregistered again.
          await catalog.registerTable(to, source.metadataLocation);
          try {
            await catalog.dropTable(from, { purge: false });
          } catch (e) {
            await catalog.dropTable(to, { purge: false }).catch(() => undefined);
            throw e;
          }
        });
        return send(reply, 204);
      }),
    );

    app.post(
      `${base}/transactions/commit`,
      write,
      handle('commit', async (req, reply) => {
        const body = objectBody(req.body, 'CommitTransactionRequest');
        if (!Array.isArray(body['table-changes'])) throw invalidInput('iceberg rest: CommitTransactionRequest: expected table-changes as an array');
        const changes = (body['table-changes'] as unknown[]).map((raw, i) => {
          const change = objectBody(raw, `table-changes[${i}]`);
          const id = identifierOf(change.identifier, `table-changes[${i}].identifier`);
          return { ctx: ctxOf(id), commit: commitOf(change, inWarehouse) };
        });
        await commitRestTransaction(locks, changes);
        return send(reply, 204);
      }),
    );
  }
}

function objectBody(body: unknown, what: string): Record<string, any> {
  if (!isJsonObject(body)) throw invalidInput(`iceberg rest: ${what}: expected a JSON object body`);
  return body;
}

function stringMap(value: unknown, what: string): Record<string, string> {
  if (!isJsonObject(value) || Object.values(value).some((v) => typeof v !== 'string')) {
    throw invalidInput(`iceberg rest: ${what}: expected an object of string values`);
  }
  return value as Record<string, string>;
}

function identifierOf(value: unknown, what: string): TableIdentifier {
  const v = value as { namespace?: unknown; name?: unknown } | undefined;
  if (!isJsonObject(v) || !Array.isArray(v.namespace) || typeof v.name !== 'string') {
    throw invalidInput(`iceberg rest: ${what}: expected {namespace: [...], name}`);
  }
  const id = { namespace: v.namespace as string[], name: v.name };
  checkTableIdentifier(id);
  return id;
}

function commitOf(body: Record<string, any>, inWarehouse: (uri: unknown, what: string) => void): TableCommit {
  if (!Array.isArray(body.requirements ?? []) || !Array.isArray(body.updates ?? [])) {
    throw invalidInput('iceberg rest: CommitTableRequest: expected requirements and updates as arrays');
  }
  const updates = (body.updates ?? []).map(updateFromJson);
  // Every location a commit names is one the server will read or write: the warehouse's only.
  for (const u of updates) {
    if (u.action === 'set-location') inWarehouse(u.location, 'set-location: location');
    else if (u.action === 'add-snapshot') inWarehouse(u.snapshot['manifest-list'], 'add-snapshot: manifest-list');
    else if (u.action === 'set-statistics') inWarehouse(u.statistics['statistics-path'], 'set-statistics: statistics-path');
    else if (u.action === 'set-partition-statistics') inWarehouse(u['partition-statistics']['statistics-path'], 'set-partition-statistics: statistics-path');
  }
  return { requirements: (body.requirements ?? []).map(requirementFromJson), updates };
}

/**
 * A location inside `warehouse`, with no `.` or `..` segment (and no backslash or NUL) that could
 * lead out of it again: the server reads and writes nothing else, whatever a client names.
 */
export function checkInWarehouse(warehouse: string, uri: unknown, what: string): void {
  const rel = typeof uri === 'string' ? relativeTo(warehouse, uri) : undefined;
  const escapes = rel === undefined || rel.split('/').some((s) => s === '' || s === '.' || s === '..') || /[\\\u0000]/.test(rel);
  if (escapes) {
    throw restError(400, 'BadRequestException', `iceberg rest: ${what} ${JSON.stringify(uri)} is not inside this server's warehouse ${warehouse}; the server reads and writes only there`);
  }
}

/**
 * A page of a sorted list: the token is the key of the last item given (so a page stays right
 * when items before it are created or dropped meanwhile). No `pageSize`: everything.
 */
function paginate<T>(all: T[], key: (t: T) => string, query: Record<string, string | undefined>): { items: T[]; next?: string } {
  const size = query.pageSize === undefined ? undefined : Number(query.pageSize);
  if (size !== undefined && (!Number.isInteger(size) || size < 1)) throw invalidInput(`iceberg rest: pageSize must be a positive integer, found ${JSON.stringify(query.pageSize)}`);
  const after = query.pageToken ? Buffer.from(query.pageToken, 'base64url').toString('utf8') : undefined;
  const rest = after === undefined ? all : all.filter((t) => key(t) > after);
  if (size === undefined || rest.length <= size) return { items: rest };
  const items = rest.slice(0, size);
  return { items, next: Buffer.from(key(items[items.length - 1]!), 'utf8').toString('base64url') };
}

/** A table's ETag: its metadata file, which names one version of the table. */
function etagOf(metadataLocation: string): string {
  return `"${createHash('sha256').update(metadataLocation).digest('base64url')}"`;
}

function matches(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const values = (Array.isArray(header) ? header : [header]).flatMap((h) => h.split(',')).map((v) => v.trim().replace(/^W\//, ''));
  return values.includes(etag) || values.includes('*');
}

