import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync } from 'fastify';
import type { Lakehouse } from '../table/lakehouse.ts';
import { liveFiles } from '../table/read/iceberg-scan.ts';
import { readDeltaSnapshot } from '../table/delta/delta-log.ts';
import { parseStats } from '../format/delta/stats.ts';
import { currentSnapshot } from '../format/iceberg/table-metadata.ts';
import { TableIndex } from './table-index.ts';

/**
 * The web console: the static files `npm run build` puts in `dist/web/` (compiled from `web/`),
 * served at `/` as public routes — the page holds no data until the user signs in, and every API
 * call it makes carries the bearer token like any other client — and one read-only route it
 * needs that the management API does not give: sizes per partition.
 */
export interface ConsoleOptions {
  lake: Lakehouse;
  index: TableIndex;
  /** The built console (default: `dist/web/` of this package). */
  dir?: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

/** `dist/web/` whether this module runs from `dist/server/` or, under tests, from `src/server/`. */
function defaultDir(): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  for (const candidate of [join(here, '..', 'web'), join(here, '..', '..', 'dist', 'web')]) {
    if (existsSync(join(candidate, 'index.html'))) return candidate;
  }
  return join(here, '..', '..', 'dist', 'web');
}

// The page loads its own files only: nothing from another origin, no inline script.
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

interface PartitionSize {
  /** The partition tuple, e.g. `{ region: 'us' }`; `{}` for an unpartitioned table. */
  partition: Record<string, unknown>;
  files: number;
  records: number;
  bytes: number;
}

export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, opts) => {
  const dir = opts.dir ?? defaultDir();
  // One route per built file, not a wildcard: an unknown path still answers 401 without a token.
  const names = existsSync(dir) ? readdirSync(dir).filter((n) => TYPES[extname(n)] !== undefined) : [];
  for (const name of names) {
    const body = readFileSync(join(dir, name));
    const url = name === 'index.html' ? '/' : `/console/${name}`;
    app.get(url, { config: { public: true }, schema: { summary: name === 'index.html' ? 'The web console (sign in with a token)' : `The web console's ${name}` } }, async (_request, reply) =>
      reply.type(TYPES[extname(name)]!).header('cache-control', 'no-cache').header('content-security-policy', CSP).header('x-content-type-options', 'nosniff').send(body),
    );
  }
  if (!names.includes('index.html')) {
    app.get('/', { config: { public: true }, schema: { summary: 'The web console (not built)' } }, async (_request, reply) =>
      reply.code(404).type('text/plain; charset=utf-8').send(`console: not built; expected ${join(dir, 'index.html')} (run npm run build)\n`),
    );
  }

  app.get<{ Params: { tableId: string } }>('/api/managed-lakehouse/tables/:tableId/partitions', {
    config: { scope: 'read' },
    schema: {
      summary: 'Live data files, rows and bytes per partition of the current version',
      params: { type: 'object', required: ['tableId'], properties: { tableId: { type: 'string', minLength: 1 } } },
    },
  }, async (request) => {
    const { table } = await opts.index.resolve(request.params.tableId);
    const d = await table.describe();
    const groups = new Map<string, PartitionSize>();
    const add = (partition: Record<string, unknown>, records: number, bytes: number) => {
      const key = JSON.stringify(partition, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
      const g = groups.get(key) ?? { partition, files: 0, records: 0, bytes: 0 };
      g.files += 1;
      g.records += records;
      g.bytes += bytes;
      groups.set(key, g);
    };
    if (d.formats.includes('iceberg')) {
      const metadata = await table.metadata();
      const head = currentSnapshot(metadata);
      if (head) for (const f of (await liveFiles(opts.lake.io, metadata, head)).data) add(f.partition, f['record-count'], f['file-size-in-bytes']);
    } else {
      const { store, key } = opts.lake.io.storeAt(d.location);
      for (const f of (await readDeltaSnapshot(store, key)).files) add(f.partitionValues ?? {}, f.stats ? (parseStats(f.stats).numRecords ?? 0) : 0, f.size);
    }
    const partitions = [...groups.values()].sort((a, b) => b.bytes - a.bytes);
    return { tableId: request.params.tableId, partitionSpec: d.partitionSpec, partitions };
  });
};
