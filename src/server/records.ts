import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isTwinlakeError, TwinlakeError } from '../core/errors.ts';
import type { FastifyPluginAsync } from 'fastify';
import type { Lakehouse } from '../table/lakehouse.ts';
import type { InputFormat } from '../table/write/input.ts';
import { parseTxnOption } from '../format/dual/write-txn.ts';
import { HttpError } from './http-errors.ts';
import { API_PROPS } from './management.ts';
import { TableIndex } from './table-index.ts';

/** The largest record post accepted by default: 256 MiB (`serve --max-body`). */
export const DEFAULT_MAX_RECORD_BYTES = 256 * 1024 * 1024;

/** Record bodies by Content-Type: NDJSON, a JSON array, CSV. */
const FORMATS: Record<string, InputFormat> = {
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson',
  'application/jsonl': 'ndjson',
  'application/json': 'json',
  'text/csv': 'csv',
};

function tooLarge(max: number): HttpError {
  return new HttpError(413, `records: the body is larger than the limit of ${max} bytes; split the batch or raise serve --max-body`);
}

/**
 * The library names the input file; the client sent a body, and the server's spool folder is none
 * of its business: an error about the spooled file speaks of the request body instead.
 */
function inTermsOfTheBody(e: unknown, path: string): unknown {
  if (!isTwinlakeError(e) || !e.message.includes(path)) return e;
  const message = e.message.replaceAll(`input ${path}`, 'request body').replaceAll(path, 'request body');
  const context = Object.fromEntries(Object.entries(e.context).map(([k, v]) => [k, v === path ? 'request body' : v]));
  return new TwinlakeError(e.kind, message, context, { cause: e, retryable: e.retryable });
}

/**
 * Copies a request body to `path` as it arrives, never holding it whole; past `max` bytes it
 * stops with 413 (and the rest of the body is read and dropped, so the client gets the answer).
 */
async function spool(body: Readable, path: string, max: number): Promise<number> {
  let bytes = 0;
  const limit = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > max) done(tooLarge(max));
      else done(null, chunk);
    },
  });
  try {
    await pipeline(body, limit, createWriteStream(path));
  } catch (e) {
    body.resume();
    throw e;
  }
  return bytes;
}

export interface RecordRoutesOptions {
  lake: Lakehouse;
  maxBytes: number;
  tempDir?: string;
  index?: TableIndex;
}

interface RecordsQuery {
  mode?: 'append' | 'overwrite' | 'merge';
  keys?: string;
  txn?: string;
  deleteWhen?: string;
  orderBy?: string;
}

/**
 * `POST /api/managed-lakehouse/tables/{tableId}/records`: a pipeline's batch, one commit. The body
 * is spooled to a temporary file (the engine reads files) and written by the library, which
 * checks every value; a bad record answers 400 with its line, column and value, and nothing is
 * committed.
 */
export const recordRoutes: FastifyPluginAsync<RecordRoutesOptions> = async (app, opts) => {
  const index = opts.index ?? new TableIndex(opts.lake);
  // In this plugin only, bodies are left unread for the route to stream.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.post<{ Params: { tableId: string }; Querystring: RecordsQuery }>('/api/managed-lakehouse/tables/:tableId/records', {
    config: { scope: 'write' },
    schema: {
      summary: 'Write a batch of records (NDJSON, a JSON array or CSV, by Content-Type) in one commit',
      consumes: Object.keys(FORMATS),
      params: { type: 'object', required: ['tableId'], properties: { tableId: { type: 'string', minLength: 1 } } },
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          mode: { type: 'string', enum: ['append', 'overwrite', 'merge'], description: "default: the table's writeMode, else append" },
          keys: { type: 'string', minLength: 1, description: "merge: key columns, comma-separated (default: the table's keyColumns)" },
          txn: { type: 'string', minLength: 1, description: 'exactly-once batch: app=ID,version=N; a batch already committed writes nothing' },
          deleteWhen: { type: 'string', minLength: 1, description: "merge: records matching this filter delete their key, e.g. op = 'D'" },
          orderBy: { type: 'string', minLength: 1, description: 'merge: within the batch the greatest value wins for a key' },
        },
      },
    },
  }, async (request, reply) => {
    const raw = request.body as Readable | undefined;
    if (!raw) throw new HttpError(400, 'records: expected a body of records (NDJSON, a JSON array or CSV)');
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const format = FORMATS[type];
    const declared = Number(request.headers['content-length'] ?? NaN);
    const fail = (e: HttpError) => {
      raw.resume();
      throw e;
    };
    if (!format) fail(new HttpError(415, `records: Content-Type must be ${Object.keys(FORMATS).join(', ')}; found ${JSON.stringify(type || '(none)')}`));
    if (declared > opts.maxBytes) fail(tooLarge(opts.maxBytes));
    const q = request.query;
    const txn = q.txn !== undefined ? parseTxnOption(q.txn) : undefined;
    const { table } = await index.resolve(request.params.tableId).catch((e: unknown) => fail(e as HttpError));
    const metadata = await table.metadata().catch(() => undefined);
    const props = metadata?.properties ?? (await table.describe()).properties;
    const mode = q.mode ?? (props[API_PROPS.writeMode] as RecordsQuery['mode']) ?? 'append';
    const keys = (q.keys ?? (mode === 'merge' ? props[API_PROPS.keyColumns] : undefined))?.split(',').map((k) => k.trim()).filter(Boolean);
    if (mode === 'merge' && !keys?.length) fail(new HttpError(400, 'query: mode merge needs keys (or keyColumns on the table)'));
    if (mode !== 'merge' && (q.keys || q.deleteWhen || q.orderBy)) fail(new HttpError(400, 'query: keys, deleteWhen and orderBy go with mode=merge'));

    const dir = await mkdtemp(join(opts.tempDir ?? tmpdir(), 'twinlake-post-'));
    try {
      const path = join(dir, `records.${format}`);
      await spool(raw, path, opts.maxBytes);
      const input = { path, format };
      const result = await (mode === 'merge'
        ? table.merge(input, { keys: keys!, txn, deleteWhen: q.deleteWhen, orderBy: q.orderBy })
        : table.write(input, { mode, txn })
      ).catch((e: unknown) => {
        throw inTermsOfTheBody(e, path);
      });
      return reply.code(200).send(result);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
};
