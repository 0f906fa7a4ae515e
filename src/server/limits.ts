import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { invalidInput } from '../core/errors.ts';
import { parseJson } from '../core/json.ts';
import { errorBody, HttpError } from './http-errors.ts';

/**
 * What one client may take from the server: time to send a request, connections at once, bytes
 * of a JSON body. A slow client (headers or body sent a byte at a time) is answered 408 and
 * dropped once its time is up, so it cannot hold a connection; past the connection limit a new
 * connection is answered 503 and closed, so the process never runs out of file descriptors or
 * memory; a body past its limit is answered 413 with the limit. Record posts have their own,
 * larger limit (`maxRecordBytes`, records.ts).
 */
export interface ServerLimits {
  /** Time to receive a request's headers, in ms; then 408 and the connection is closed. */
  headersTimeoutMs: number;
  /** Time to receive a whole request, headers and body, in ms (a record post's body too); then 408. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open, in ms. */
  keepAliveTimeoutMs: number;
  /** Connections at once; a new one past it is answered 503 and closed. 0: no limit. */
  maxConnections: number;
  /** The largest JSON request body (management API, Iceberg REST catalog), in bytes. */
  maxJsonBytes: number;
}

/**
 * Node's own defaults are 60 s for headers, 300 s for a request, no connection limit, and a check
 * every 30 s (so a slow client held up to 90 s). Headers take a well-behaved client milliseconds;
 * 10 s leaves room for a congested link. A request keeps Node's 300 s: a 256 MiB record post must
 * fit in it on a slow link. 1,024 connections are far more than one warehouse's pipelines need;
 * each takes a file descriptor, so `ulimit -n` must be above the limit (the server's own files
 * need some too).
 */
export const DEFAULT_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 1024,
  maxJsonBytes: 1024 * 1024,
};

export function resolveLimits(given: Partial<ServerLimits> = {}): ServerLimits {
  const limits = { ...DEFAULT_LIMITS, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) } as ServerLimits;
  for (const [k, v] of Object.entries(limits)) {
    if (!Number.isSafeInteger(v) || v < 0) throw invalidInput(`server: limit ${k} must be a whole number >= 0, found ${String(v)}`);
  }
  return limits;
}

/** The Fastify (and Node http) options that carry the limits. */
export function limitOptions(limits: ServerLimits): Partial<FastifyServerOptions> {
  const timeouts = [limits.headersTimeoutMs, limits.requestTimeoutMs].filter((t) => t > 0);
  return {
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    bodyLimit: limits.maxJsonBytes,
    http: {
      // Node requires headersTimeout <= requestTimeout (0 is no limit).
      headersTimeout: limits.requestTimeoutMs > 0 ? Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) : limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks the timeouts every interval: a quarter of the shortest, at most 1 s.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, ...timeouts.map((t) => Math.floor(t / 4)))),
    },
  } as Partial<FastifyServerOptions>;
}

const OVER_LIMIT = Symbol('twinlake.overConnectionLimit');

/**
 * Installs the connection limit, the JSON body parser (errors name line and column), and the
 * messages of requests the limits refuse. Call before any route is registered.
 */
export function installLimits(app: FastifyInstance, limits: ServerLimits): void {
  let open = 0;
  app.server.on('connection', (socket: Socket & { [OVER_LIMIT]?: boolean }) => {
    open++;
    socket.once('close', () => open--);
    if (limits.maxConnections > 0 && open > limits.maxConnections) {
      // Counted, answered and closed, never served: a request on it gets 503 (onRequest below);
      // a connection that sends nothing is closed after a short wait.
      socket[OVER_LIMIT] = true;
      socket.setTimeout(Math.min(2000, limits.headersTimeoutMs || 2000), () => socket.destroy());
    }
  });
  app.addHook('onRequest', async (request, reply) => {
    if ((request.raw.socket as { [OVER_LIMIT]?: boolean } | undefined)?.[OVER_LIMIT]) {
      reply.header('connection', 'close').header('retry-after', '1');
      return reply.code(503).send(errorBody(503, `server: ${limits.maxConnections} connections are open, the limit; retry later`, 'ServiceUnavailableException'));
    }
  });

  app.addContentTypeParser('application/json', { parseAs: 'string' }, jsonBodyParser('request body'));
}

/**
 * The server's one JSON body parser (64-bit IDs kept exact; a fault answered 400 with line and
 * column). `allowEmpty`: an empty body is no body, for routes that may have none (the REST catalog's
 * bodiless POSTs); elsewhere an empty body is refused.
 */
export function jsonBodyParser(source: string, opts: { allowEmpty?: boolean } = {}) {
  return (_request: unknown, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void => {
    const text = String(body);
    if (text.trim() === '') {
      if (opts.allowEmpty) return done(null, undefined);
      return done(new HttpError(400, `${source}: expected JSON, found an empty body`), undefined);
    }
    try {
      done(null, parseJson(text, source));
    } catch (e) {
      done(new HttpError(400, e instanceof Error ? e.message : String(e)), undefined);
    }
  };
}

/** The error a limit or the body parser raised, worded with the limit; anything else as it is. */
export function limitError(e: unknown, limits: ServerLimits): unknown {
  const code = (e as { code?: unknown } | null)?.code;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new HttpError(413, `request body: larger than the limit of ${limits.maxJsonBytes} bytes for a JSON body (serve --max-json-body)`);
  }
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new HttpError(415, 'request body: Content-Type must be application/json for this route');
  if (code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || (e instanceof Error && e.message === 'aborted')) {
    // The client went away, or took longer than the request timeout: no answer reaches it, and
    // nothing is wrong with the server.
    return new HttpError(408, `request: the body ended before its length (the client closed the connection or took longer than the request timeout of ${limits.requestTimeoutMs} ms)`);
  }
  if (code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') return new HttpError(400, 'request body: its size did not match its Content-Length');
  return e;
}
