import { runMaintenance } from '../../src/maintenance/maintain.ts';
import type { Lakehouse } from '../../src/index.ts';
import Fastify from 'fastify';
import { stringifyJson } from '../../src/core/json.ts';
import { icebergRestPlugin } from '../../src/server/iceberg-rest/plugin.ts';
import { appendUpdatesJson, foreignAppend, SCHEMA } from '../server/iceberg-rest-append.ts';
import type { CrashCase } from './crash-matrix.ts';

/**
 * The operations of the crash matrix, each on a small table (a few rows in a few files) so that a
 * point costs little: the number of storage calls, not the data, is what the matrix explores.
 */
/**
 * What a case's setup made for its run, by warehouse (the metadata file register adopts, the
 * commit a REST client sends), so a child process can be handed it.
 */
const inputs = new Map<string, Record<string, unknown>>();
const inputsOf = (warehouse: string) => inputs.get(warehouse) ?? inputs.set(warehouse, {}).get(warehouse)!;
export const caseInputs = (warehouse: string): Record<string, unknown> => inputsOf(warehouse);
export const restoreCaseInputs = (warehouse: string, saved: Record<string, unknown>): void => void inputs.set(warehouse, saved);

const rows = (from: number, n: number, v = 'a') => Array.from({ length: n }, (_, i) => ({ id: from + i, v: `${v}${from + i}` }));

/** Two appends: two data files, two snapshots, Delta versions 0 and 1. */
async function twoAppends(lake: Lakehouse, properties?: Record<string, string>): Promise<void> {
  await lake.table('ns.t').append(rows(1, 3), properties ? { properties } : {});
  await lake.table('ns.t').append(rows(4, 3));
}

const MOR = { 'write.merge.mode': 'merge-on-read', 'write.delete.mode': 'merge-on-read' };
// Every maintenance operation runs past its safety windows, on snapshots it may expire.
const LATER = { now: Date.now() + 30 * 86400_000, olderThan: 3600_000, retention: 3600_000 };

export const WRITE_CASES: CrashCase[] = [
  { name: 'create', table: 'ns.t', setup: async () => undefined, run: (lake) => lake.table('ns.t').create({ type: 'struct', fields: [{ id: 1, name: 'id', type: 'long', required: false }] }) },
  { name: 'append (first, creates)', table: 'ns.t', setup: async () => undefined, run: (lake) => lake.table('ns.t').append(rows(1, 3)) },
  { name: 'append', table: 'ns.t', setup: twoAppends, run: (lake) => lake.table('ns.t').append(rows(10, 2)) },
  { name: 'overwrite', table: 'ns.t', setup: twoAppends, run: (lake) => lake.table('ns.t').overwrite(rows(20, 2)) },
  { name: 'merge copy-on-write', table: 'ns.t', setup: twoAppends, run: (lake) => lake.table('ns.t').merge([...rows(2, 1, 'm'), ...rows(30, 1, 'm')], { keys: ['id'], strategy: 'copy-on-write' }) },
  { name: 'merge merge-on-read', table: 'ns.t', setup: (lake) => twoAppends(lake, MOR), run: (lake) => lake.table('ns.t').merge([...rows(2, 1, 'm'), ...rows(30, 1, 'm')], { keys: ['id'], strategy: 'merge-on-read' }) },
  { name: 'delete copy-on-write', table: 'ns.t', setup: twoAppends, run: (lake) => lake.table('ns.t').delete('id = 2', { strategy: 'copy-on-write' }) },
  { name: 'delete merge-on-read', table: 'ns.t', setup: (lake) => twoAppends(lake, MOR), run: (lake) => lake.table('ns.t').delete('id = 2', { strategy: 'merge-on-read' }) },
  {
    name: 'Delta-only append',
    table: 'ns.d',
    deltaOnly: true,
    setup: (lake) => lake.table('ns.d').append(rows(1, 3), { formats: ['delta'] }).then(() => undefined),
    run: (lake) => lake.table('ns.d').append(rows(10, 2)),
  },
  { name: 'Delta-only create-by-write', table: 'ns.d', deltaOnly: true, setup: async () => undefined, run: (lake) => lake.table('ns.d').append(rows(1, 3), { formats: ['delta'] }) },
  {
    name: 'sync',
    table: 'ns.t',
    sameRows: true,
    // An Iceberg commit whose Delta commit never happened (a lost one): the sync writes it.
    setup: async (lake) => {
      await twoAppends(lake);
      const { metadata } = await lake.catalog.loadTable({ namespace: ['ns'], name: 't' });
      const log: string[] = [];
      for await (const o of lake.io.list(`${metadata.location}/_delta_log/`)) if (o.uri.endsWith('.json')) log.push(o.uri);
      await lake.io.delete(log.sort().at(-1)!);
    },
    run: (lake) => lake.table('ns.t').syncDelta(),
  },
  {
    name: 'register',
    table: 'ns.t',
    setup: async (lake) => {
      await lake.table('ext.src').append(rows(1, 3), { formats: ['iceberg'] });
      const { metadataLocation } = await lake.catalog.loadTable({ namespace: ['ext'], name: 'src' });
      await lake.catalog.dropTable({ namespace: ['ext'], name: 'src' });
      inputsOf(lake.warehouse).register = metadataLocation;
    },
    run: (lake) => lake.table('ns.t').register(inputsOf(lake.warehouse).register as string),
  },
];

/** Three appends of small files, an orphan a dead write left, and old metadata: something for every maintenance operation to do. */
async function maintainable(lake: Lakehouse): Promise<void> {
  await twoAppends(lake, { 'write.metadata.previous-versions-max': '1' });
  await lake.table('ns.t').append(rows(7, 2));
  const { metadata } = await lake.catalog.loadTable({ namespace: ['ns'], name: 't' });
  await lake.io.write(`${metadata.location}/data/orphan-of-a-dead-write.parquet`, 'not referenced');
  // From now on old metadata files may go (metadata cleanup's work); the commits so far kept them.
  await lake.table('ns.t').alter({ set: { 'write.metadata.delete-after-commit.enabled': 'true' } });
}

export const MAINTENANCE_CASES: CrashCase[] = ['snapshot_expiry', 'orphan_cleanup', 'compaction', 'metadata_cleanup', 'delta_checkpoint', 'full_maintenance'].map((operation) => ({
  name: operation,
  table: 'ns.t',
  sameRows: true,
  tombstones: operation === 'full_maintenance',
  setup: maintainable,
  run: (lake: Lakehouse) => runMaintenance(lake.table('ns.t'), operation, LATER),
}));


/**
 * A commit through the server's Iceberg REST catalog route, as another engine sends it after
 * writing its data file, manifest and manifest list (iceberg-rest-append.ts): the server commits
 * it and Delta follows.
 */
export const REST_CASE: CrashCase = {
  name: 'REST catalog commit',
  table: 'web.events',
  setup: async (lake) => {
    const ident = { namespace: ['web'], name: 'events' };
    await lake.table('web.events').create(SCHEMA);
    const { json } = await foreignAppend(lake, ident, [{ id: 1, name: 'a' }, { id: 2, name: 'b' }], 1001n);
    inputsOf(lake.warehouse).rest = { requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }], updates: appendUpdatesJson(json) };
  },
  run: async (lake) => {
    const app = Fastify({ logger: false });
    try {
      await app.register(icebergRestPlugin, { prefix: '/iceberg', lake });
      const res = await app.inject({
        method: 'POST',
        url: '/iceberg/v1/twinlake/namespaces/web/tables/events',
        headers: { 'content-type': 'application/json' },
        payload: stringifyJson(inputsOf(lake.warehouse).rest),
      });
      if (res.statusCode !== 200) throw new Error(`REST commit answered ${res.statusCode}: ${res.body}`);
    } finally {
      await app.close();
    }
  },
};

export const ALL_CASES: CrashCase[] = [...WRITE_CASES, ...MAINTENANCE_CASES, REST_CASE];
