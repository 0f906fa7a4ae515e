import { icebergRestPlugin } from './iceberg-rest/plugin.ts';
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyServerOptions } from 'fastify';
import type { Lakehouse } from '../table/lakehouse.ts';
import { TWINLAKE_VERSION } from '../format/dual/version.ts';
import type { RouteAuthConfig, TokenService } from './auth-types.ts';
import { authorize } from './auth.ts';
import { errorBody, errorResponse } from './http-errors.ts';
import { redactUrl } from '../config/redact.ts';
import { openApiDocument, formatSchemaErrors, type RouteEntry } from './openapi.ts';
import { managementRoutes, type ManagementOptions } from './management.ts';
import { recordRoutes, DEFAULT_MAX_RECORD_BYTES } from './records.ts';
import { TableIndex } from './table-index.ts';
import { consoleRoutes } from './console.ts';
import { MaintenanceScheduler, MaintenanceLocks } from './maintenance-scheduler.ts';
import type { MaintenanceDefaults } from '../maintenance/schedule.ts';
import type { Clock } from '../core/clock.ts';
import { installLimits, limitError, limitOptions, resolveLimits, type ServerLimits } from './limits.ts';

export interface ServerOptions extends Pick<ManagementOptions, 'catalogType' | 'warehouseUri'> {
  lake: Lakehouse;
  tokens: TokenService;
  /** Where log lines go (one JSON object per line, each with its request ID); false for none. */
  log?: NodeJS.WritableStream | false;
  logLevel?: string;
  /** The largest record post body, in bytes; a larger one answers 413. */
  maxRecordBytes?: number;
  /** Where record posts are spooled before the write (default: the system temp folder). */
  tempDir?: string;
  /**
   * The routes registered under `/iceberg` with `{ lake, tokens }`: the Iceberg REST catalog
   * (icebergRestPlugin) unless a test gives others. Its routes declare `config.scope` (or
   * `config.public`) like every other route: the one auth hook below covers them.
   */
  iceberg?: FastifyPluginAsync<{ lake: Lakehouse; tokens: TokenService }>;
  maintenance?: {
    /** The config's maintenance settings of a table (resolve-config.ts maintenanceDefaultsFor). */
    defaultsFor?: (name: string) => MaintenanceDefaults;
    /** Run due maintenance in the background (maintenance-scheduler.ts); off unless given. */
    background?: false | { intervalMs?: number; clock?: Clock };
  };
  /** Timeouts, the connection limit and the JSON body limit (limits.ts has the defaults). */
  limits?: Partial<ServerLimits>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, with its schema and auth config (for OpenAPI and the auth tests). */
    routeTable: RouteEntry[];
    /** The background maintenance, when the server runs it. */
    maintenanceScheduler?: MaintenanceScheduler;
    /** The limits the server runs with, for plugins that word their own errors. */
    serverLimits: ServerLimits;
  }
  interface FastifyContextConfig extends RouteAuthConfig {}
  /** What the OpenAPI document says of a route beside its request and response schemas. */
  interface FastifySchema {
    summary?: string;
    description?: string;
    /** Content types of a body the route streams itself (no body schema). */
    consumes?: string[];
  }
}

/**
 * The HTTP server of `twinlake serve`: thin, like the CLI — parse and validate the request, call
 * the library, format the answer. Request and response shapes live in the route schemas, which
 * also validate requests and make `/openapi.json`.
 */
export async function buildServer(opts: ServerOptions): Promise<FastifyInstance> {
  const logger: FastifyServerOptions['logger'] =
    opts.log === false || opts.log === undefined
      ? false
      : {
          level: opts.logLevel ?? 'info',
          stream: opts.log,
          // Fastify logs no headers by default; should a serializer ever add them, the token stays out.
          redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '***' },
          // A client may put a token in the query string (`?token=`, `?access_token=`): the logged URL never holds it.
          serializers: { req: (req: { method: string; url: string; ip?: string }) => ({ method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }) },
        };
  const limits = resolveLimits(opts.limits);
  const app = Fastify({
    logger,
    genReqId: () => randomUUID(),
    requestIdHeader: 'x-request-id',
    forceCloseConnections: 'idle',
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false, verbose: true } },
    schemaErrorFormatter: formatSchemaErrors,
    ...limitOptions(limits),
  });
  app.decorate('serverLimits', limits);
  // First of the hooks: a connection past the limit is answered before anything else runs.
  installLimits(app, limits);
  app.decorate('routeTable', [] as RouteEntry[]);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) app.routeTable.push({ method, url: route.url, schema: route.schema as RouteEntry['schema'], config: route.config as RouteAuthConfig | undefined });
  });

  // Bigints (snapshot IDs) leave as strings: JSON numbers past 2^53 lose digits in most clients.
  app.setReplySerializer((payload) => JSON.stringify(payload, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // A request no route matched still needs a token (an unknown path tells nothing to strangers).
    const config: RouteAuthConfig = request.is404 ? { scope: 'read' } : ((request.routeOptions.config ?? {}) as RouteAuthConfig);
    const decision = await authorize(config, request.headers.authorization, opts.tokens);
    if (!decision.ok) {
      request.log.info({ status: decision.status }, decision.message);
      return reply.code(decision.status).send(errorBody(decision.status, decision.message));
    }
  });

  // While stopping, each answer closes its connection: a keep-alive connection that turns idle
  // after the last request in flight would otherwise hold the process until its timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  // A query string is text: its whole numbers become numbers where the schema wants an integer.
  // Bodies are JSON and are not coerced (1 is not "1", "yes" is not true).
  app.addHook('preValidation', async (request) => {
    const props = (request.routeOptions.schema?.querystring as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties;
    const query = request.query as Record<string, unknown> | undefined;
    if (!props || !query) return;
    for (const [k, v] of Object.entries(query)) {
      if (props[k]?.type === 'integer' && typeof v === 'string' && /^-?\d+$/.test(v)) query[k] = Number(v);
    }
  });

  app.setErrorHandler((error, request, reply) => {
    const { status, body } = errorResponse(limitError(error, limits));
    if (status >= 500) request.log.error({ status, error: body.error }, 'request failed');
    else request.log.info({ status }, body.error.message);
    return reply.code(status).send(body);
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send(errorBody(404, `server: no route ${request.method} ${request.url.split('?')[0]}`)));

  app.get('/health', { config: { public: true }, schema: { summary: 'Liveness: the server answers', response: { 200: { type: 'object', properties: { status: { type: 'string' }, version: { type: 'string' } } } } } }, async () => ({
    status: 'ok',
    version: TWINLAKE_VERSION,
  }));
  app.get('/openapi.json', { config: { scope: 'read' }, schema: { summary: 'This document: the management API, generated from the route schemas' } }, async () =>
    openApiDocument(app.routeTable.filter((r) => !r.url.startsWith('/iceberg')), TWINLAKE_VERSION),
  );

  const index = new TableIndex(opts.lake);
  // One maintenance run at a time per table, shared by the API's route and the background runs.
  const locks = new MaintenanceLocks();
  const defaultsFor = opts.maintenance?.defaultsFor;
  await app.register(managementRoutes, { lake: opts.lake, catalogType: opts.catalogType, warehouseUri: opts.warehouseUri, index, locks, maintenanceDefaultsFor: defaultsFor });
  await app.register(consoleRoutes, { lake: opts.lake, index });
  await app.register(recordRoutes, { lake: opts.lake, maxBytes: opts.maxRecordBytes ?? DEFAULT_MAX_RECORD_BYTES, tempDir: opts.tempDir, index });

  // The Iceberg REST catalog (src/server/iceberg-rest/), under the same auth hook.
  await app.register(opts.iceberg ?? icebergRestPlugin, { prefix: '/iceberg', lake: opts.lake, tokens: opts.tokens });

  const background = opts.maintenance?.background;
  if (background) {
    const scheduler = new MaintenanceScheduler({ lake: opts.lake, locks, defaultsFor, intervalMs: background.intervalMs, clock: background.clock, log: app.log });
    app.decorate('maintenanceScheduler', scheduler);
    // Closing waits for a run in progress (it commits through the one Transaction) and starts no other.
    app.addHook('preClose', async () => scheduler.stop());
  }
  await app.ready();
  app.maintenanceScheduler?.start();
  return app;
}
