import { randomUUID } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, utimesSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { localPath } from '../../src/core/uri.ts';
import { parseLogFileName } from '../../src/format/delta/actions.ts';
import type { ScanTask } from '../../src/format/scan-task.ts';
import { Lakehouse, type Table } from '../../src/index.ts';
import { readManifestList } from '../../src/table/commit/manifest-io.ts';
import { rawCommit, setRef } from '../../src/table/commit/table-actions.ts';
import { committedOrThrow, Transaction } from '../../src/table/commit/transaction.ts';
import { compact, type CompactOptions } from '../../src/maintenance/compact.ts';
import { expireSnapshots, type ExpireResult } from '../../src/maintenance/expire.ts';
import { runMaintenance, type FullMaintenanceResult } from '../../src/maintenance/maintain.ts';
import { cleanMetadata } from '../../src/maintenance/metadata-cleanup.ts';
import { removeOrphans } from '../../src/maintenance/orphans.ts';
import { errorOf, listFiles, tempDir } from '../helpers.ts';
import { duckdbRows as duckdbRowsOf, missingFiles } from '../reliability/table-checks.ts';
import { seededDraws } from '../seeded.ts';

/**
 * A seeded random workload against an in-memory model: appends, overwrites, merges and deletes
 * (copy-on-write and merge-on-read), partition evolution, tags set and removed (expiry keeps what
 * they name), interleaved with every maintenance
 * operation, on a partitioned (format v2: position delete files) and an unpartitioned table
 * (format v3: deletion vectors). The lakehouse's clock moves an hour a step, so expiry really
 * expires; orphan and metadata cleanup are given a `now` past their safety windows (file ages
 * are wall-clock), or find planted orphans aged past them.
 *
 * After every step: both formats equal the model through our readers and through DuckDB over the
 * live files (deletes applied in SQL); every retained snapshot and every retained Delta version
 * reads the model's rows for it, and every file they reference exists; the snapshots and Delta
 * versions left are exactly the model's, so what expiry expired is gone and nothing else is.
 *
 * A failure names the seed and the steps so far; `TWINLAKE_WORKLOAD_SEEDS=5,6,7` runs other seeds,
 * `TWINLAKE_WORKLOAD_LOG=1` prints every run's steps.
 */

const HOUR = 3600e3;
const DAY = 24 * HOUR;
const STEPS = 32;
const SEEDS = (process.env.TWINLAKE_WORKLOAD_SEEDS ?? '1,2').split(',').map(Number);

/** A deterministic random sequence (an LCG: the same seed, the same workload). */
function rng(seed: number) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  return seededDraws(next);
}

interface Row {
  id: number;
  grp: string;
  v: number;
}

const grpOf = (id: number) => ['a', 'b', 'c'][id % 3]!;
const canon = (rows: readonly Record<string, unknown>[]) => rows.map((r) => `${Number(r.id)}|${r.grp}|${Number(r.v)}`).sort();

const SCHEMA = {
  type: 'struct' as const,
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' as const },
    { id: 2, name: 'grp', required: false, type: 'string' as const },
    { id: 3, name: 'v', required: false, type: 'long' as const },
  ],
};

/** The model: the live rows, and the rows of every snapshot and Delta version the table retains. */
class Model {
  rows = new Map<number, Row>();
  snapshots = new Map<bigint, { rows: string[]; timestampMs: number; version: number }>();
  /** Tags (name → snapshot): expiry keeps what they name. */
  tags = new Map<string, bigint>();
  versions = new Map<number, string[]>();
  nextId = 0;
  latest: bigint | undefined;
  current(): string[] {
    return canon([...this.rows.values()] as unknown as Record<string, unknown>[]);
  }
}

interface Shape {
  name: string;
  partition?: string;
  /** Specs a partition evolution step moves between (identity columns stay: Delta keeps them). */
  evolutions: string[];
  formatVersion: '2' | '3';
}

const SHAPES: Shape[] = [
  { name: 'partitioned', partition: 'grp', evolutions: ['grp, bucket(2, id)', 'grp', 'grp, truncate(10, id)'], formatVersion: '2' },
  { name: 'unpartitioned', evolutions: [], formatVersion: '3' },
];

type StepKind =
  | 'append'
  | 'overwrite'
  | 'merge-cow'
  | 'merge-mor'
  | 'delete-cow'
  | 'delete-mor'
  | 'evolve'
  | 'tag'
  | 'untag'
  | 'snapshot_expiry'
  | 'orphan_cleanup'
  | 'compaction'
  | 'metadata_cleanup'
  | 'delta_checkpoint'
  | 'full_maintenance';

const WRITES: StepKind[] = ['append', 'append', 'merge-cow', 'merge-mor', 'merge-mor', 'delete-cow', 'delete-mor', 'overwrite', 'tag', 'untag'];
const MAINTENANCE: StepKind[] = ['snapshot_expiry', 'snapshot_expiry', 'orphan_cleanup', 'compaction', 'metadata_cleanup', 'delta_checkpoint', 'full_maintenance'];

/**
 * The step sequence: writes and maintenance alternate at random, every operation appears at
 * least once (each maintenance operation, both merge and delete strategies, an evolution where
 * the table has specs to move between).
 */
function planSteps(seed: number, shape: Shape): StepKind[] {
  const r = rng(seed * 7919 + shape.name.length);
  const must: StepKind[] = [...new Set([...WRITES, ...MAINTENANCE]), ...(shape.evolutions.length ? (['evolve'] as StepKind[]) : [])];
  const steps: StepKind[] = ['append', 'append'];
  while (steps.length < STEPS) {
    const pool = r.next() < 0.55 ? [...WRITES, ...(shape.evolutions.length ? (['evolve'] as StepKind[]) : [])] : MAINTENANCE;
    steps.push(r.pick(pool));
  }
  // Whatever the draw left out goes in at a random place after the first writes.
  for (const k of must) if (!steps.includes(k)) steps.splice(r.int(2, steps.length), 0, k);
  return steps;
}

/** DuckDB's rows of a plan's live files, deletes applied in SQL. */
const duckdbRows = async (conn: DuckDBConnection, task: ScanTask): Promise<string[]> => canon(await duckdbRowsOf(conn, task, ['id', 'grp', 'v']));

/** Every file a plan reads (data files and their delete files) exists. */
function expectFilesExist(task: ScanTask, what: string): void {
  expect(missingFiles(task), `${what}: files the plan reads`).toEqual([]);
}

const commitVersions = (dir: string) =>
  readdirSync(join(dir, '_delta_log'))
    .map((n) => parseLogFileName(n))
    .filter((f) => f?.kind === 'commit')
    .map((f) => f!.version)
    .sort((a, b) => a - b);

async function checkAgainstModel(t: Table, m: Model, dir: string, conn: DuckDBConnection): Promise<void> {
  const expected = m.current();
  expect(canon(await t.read()), 'iceberg, current').toEqual(expected);
  expect(canon(await t.read({ format: 'delta' })), 'delta, current').toEqual(expected);

  // The table keeps exactly the model's snapshots and Delta versions: expired ones are gone.
  const metadata = await t.metadata();
  expect(metadata.snapshots.map((s) => s['snapshot-id']).sort(), 'retained snapshots').toEqual([...m.snapshots.keys()].sort());
  expect(Object.entries(metadata.refs).filter(([, ref]) => ref.type === 'tag').map(([name, ref]) => [name, ref['snapshot-id']]).sort(), 'tags').toEqual([...m.tags].sort());
  expect(commitVersions(dir), 'retained Delta versions').toEqual([...m.versions.keys()].sort((a, b) => a - b));
  expect(existsSync(join(dir, 'metadata', 'version-hint.text'))).toBe(true);
  const { metadataLocation } = await t.context.catalog.loadTable(t.context.ident);
  for (const f of [metadataLocation, ...(metadata['metadata-log'] ?? []).map((e) => e['metadata-file'])]) expect(existsSync(localPath(f)), `metadata file ${f}`).toBe(true);

  for (const s of metadata.snapshots) {
    const id = s['snapshot-id'];
    const what = `snapshot ${id}`;
    expect(existsSync(localPath(s['manifest-list'])), `${what}: manifest list`).toBe(true);
    for (const mf of await readManifestList(t.context.io, s['manifest-list'])) expect(existsSync(localPath(mf['manifest-path'])), `${what}: manifest ${mf['manifest-path']}`).toBe(true);
    expect(s['timestamp-ms'], `${what}: timestamp`).toBe(m.snapshots.get(id)!.timestampMs);
    const want = m.snapshots.get(id)!.rows;
    expect(canon(await t.read({ snapshotId: id })), `${what}, our reader`).toEqual(want);
    const plan = await t.plan({ snapshotId: id });
    expectFilesExist(plan.task, what);
    expect(await duckdbRows(conn, plan.task), `${what}, duckdb`).toEqual(want);
  }
  for (const [version, want] of m.versions) {
    const what = `delta version ${version}`;
    expect(canon(await t.read({ format: 'delta', version })), `${what}, our reader`).toEqual(want);
    const plan = await t.plan({ format: 'delta', version });
    expectFilesExist(plan.task, what);
    expect(await duckdbRows(conn, plan.task), `${what}, duckdb`).toEqual(want);
  }
}

/** The files a cleanup must remove: a stray data file, a manifest, a manifest list, a stale staging file, a never-current metadata file, a Delta DV file. */
function plantOrphans(dir: string): string[] {
  const all = listFiles(dir);
  const data = all.filter((f) => f.startsWith('data/') && f.endsWith('.parquet') && !f.endsWith('-deletes.parquet'));
  const avro = all.filter((f) => f.startsWith('metadata/') && f.endsWith('.avro'));
  const planted: [string, string][] = [
    [data[0]!, join(dirname(data[0]!), `${randomUUID()}.parquet`)],
    [avro.find((f) => !f.includes('/snap-'))!, `metadata/${randomUUID()}-m0.avro`],
    [avro.find((f) => f.includes('/snap-'))!, `metadata/snap-77-1-${randomUUID()}.avro`],
    [data[0]!, `data/${randomUUID()}.parquet.tmp`],
    ['metadata/version-hint.text', `metadata/09999-${randomUUID()}.metadata.json`],
  ];
  const dv = all.find((f) => /deletion_vector_.*\.bin$/.test(f));
  if (dv) planted.push([dv, join(dirname(dv), `deletion_vector_${randomUUID()}.bin`)]);
  for (const [from, to] of planted) {
    mkdirSync(join(dir, dirname(to)), { recursive: true });
    copyFileSync(join(dir, from), join(dir, to));
  }
  return planted.map(([, to]) => to).sort();
}

function age(dir: string, files: string[], ms: number): void {
  const t = new Date(Date.now() - ms);
  for (const f of files) utimesSync(join(dir, f), t, t);
}

/** Applies an expiry's result to the model, after checking it expired exactly what the retention says. */
async function expectExpiry(t: Table, m: Model, r: ExpireResult, nowMs: number, retentionMs: number): Promise<void> {
  const metadata = await t.metadata();
  const current = metadata['current-snapshot-id'];
  // One linear branch: the current snapshot, the tagged ones and those within the retention are
  // kept; the Delta log is kept from the oldest version mirroring one of them, and so is every
  // snapshot a version from there mirrors. The rest goes.
  const cutoff = nowMs - retentionMs;
  expect(r.cutoffMs).toBe(cutoff);
  const tagged = new Set(m.tags.values());
  const keptFrom = Math.min(...[...m.snapshots].filter(([id, s]) => id === current || tagged.has(id) || s.timestampMs >= cutoff).map(([, s]) => s.version));
  const expected = [...m.snapshots].filter(([, s]) => s.version < keptFrom).map(([id]) => id);
  expect([...r.expiredSnapshots].sort(), 'expired snapshots').toEqual(expected.sort());
  for (const id of expected) m.snapshots.delete(id);
  for (const id of expected) expect((await errorOf(t.read({ snapshotId: id }))).kind, `snapshot ${id} expired`).toBe('not-found');
  for (const id of tagged) expect(m.snapshots.has(id), `tagged snapshot ${id} kept`).toBe(true);
  // Versions before the oldest kept one are gone from the log.
  expect(r.delta?.keptFromVersion, 'kept from version').toBe(keptFrom);
  const gone = [...m.versions.keys()].filter((v) => v < keptFrom);
  if (gone.length > 0) expect(r.delta!.removedLogFiles.length).toBeGreaterThan(0);
  for (const v of gone) m.versions.delete(v);
  for (const v of gone) expect((await errorOf(t.read({ format: 'delta', version: v }))).kind, `delta version ${v} removed`).toBe('not-found');
}

async function runWorkload(lake: Lakehouse, clock: { t: number }, warehouse: string, seed: number, shape: Shape, conn: DuckDBConnection): Promise<void> {
  const name = `wl.${shape.name}_${seed}`;
  const dir = join(warehouse, 'wl', `${shape.name}_${seed}`);
  const t = lake.table(name);
  const r = rng(seed);
  const m = new Model();
  const steps = planSteps(seed, shape);
  let spec = 0;
  await t.create(SCHEMA, {
    ...(shape.partition ? { partition: shape.partition } : {}),
    properties: {
      'format-version': shape.formatVersion,
      'delta.checkpointInterval': '4',
      'write.metadata.delete-after-commit.enabled': 'true',
      'write.metadata.previous-versions-max': '3',
      // Checkpoints superseded for more than an hour may go; expiry's retention stays the option's (longer).
      'delta.logRetentionDuration': 'interval 1 hour',
    },
  });
  for (const v of commitVersions(dir)) m.versions.set(v, []);

  /** A write or maintenance commit's snapshot and Delta version join the model with the live rows. */
  const record = (snapshotId: bigint | undefined, deltaVersion: number | undefined) => {
    if (snapshotId === undefined) return;
    // A change that found nothing to change commits nothing and names the current snapshot.
    if (snapshotId === m.latest) return expect(m.current(), 'rows of a change that committed nothing').toEqual(m.snapshots.get(snapshotId)!.rows);
    expect(m.snapshots.has(snapshotId)).toBe(false);
    m.latest = snapshotId;
    expect(deltaVersion, `snapshot ${snapshotId} has a Delta version`).toBeDefined();
    m.snapshots.set(snapshotId, { rows: m.current(), timestampMs: clock.t, version: deltaVersion! });
    m.versions.set(deltaVersion!, m.current());
  };
  const rowsFor = (ids: number[]) => ids.map((id) => ({ id, grp: grpOf(id), v: r.int(0, 999) }));
  const fresh = (n: number) => Array.from({ length: n }, () => m.nextId++);

  const log: string[] = [];
  for (const [i, kind] of steps.entries()) {
    clock.t += HOUR;
    let detail = '';
    try {
      const live = [...m.rows.keys()];
      switch (kind) {
        case 'append':
        case 'evolve': {
          const rows = rowsFor(fresh(r.int(2, 6)));
          const partition = kind === 'evolve' ? shape.evolutions[spec++ % shape.evolutions.length]! : undefined;
          detail = `${rows.length} rows${partition ? ` with partition ${partition}` : ''}`;
          const w = await t.append(rows, partition ? { partition } : {});
          for (const row of rows) m.rows.set(row.id, row);
          record(w.snapshotId, w.deltaVersion);
          break;
        }
        case 'overwrite': {
          const rows = rowsFor(fresh(r.int(3, 8)));
          detail = `${rows.length} rows`;
          const w = await t.overwrite(rows);
          m.rows = new Map(rows.map((row) => [row.id, row]));
          record(w.snapshotId, w.deltaVersion);
          break;
        }
        case 'merge-cow':
        case 'merge-mor': {
          const updates = r.sample(live, r.int(0, 3));
          const deletes = r.sample(live.filter((id) => !updates.includes(id)), r.int(0, 2));
          const inserts = fresh(r.int(0, 3));
          if (updates.length + inserts.length + deletes.length === 0) inserts.push(...fresh(1));
          const batch = [...rowsFor([...updates, ...inserts]).map((row) => ({ ...row, op: 'U' })), ...rowsFor(deletes).map((row) => ({ ...row, op: 'D' }))];
          detail = `update ${updates.join(',') || '-'}, insert ${inserts.join(',') || '-'}, delete ${deletes.join(',') || '-'}`;
          const w = await t.merge(batch, { keys: ['id'], deleteWhen: "op = 'D'", excludeColumns: ['op'], strategy: kind === 'merge-cow' ? 'copy-on-write' : 'merge-on-read' });
          for (const b of batch) {
            if (b.op === 'D') m.rows.delete(b.id);
            else m.rows.set(b.id, { id: b.id, grp: b.grp, v: b.v });
          }
          record(w.snapshotId, w.deltaVersion);
          break;
        }
        case 'delete-cow':
        case 'delete-mor': {
          const byValue = r.next() < 0.3;
          const threshold = r.int(50, 300);
          const ids = r.sample(live, r.int(1, 3));
          const where = byValue ? `v < ${threshold}` : `id IN (${(ids.length ? ids : [-1]).join(', ')})`;
          detail = where;
          const w = await t.delete(where, { strategy: kind === 'delete-cow' ? 'copy-on-write' : 'merge-on-read' });
          const doomed = byValue ? [...m.rows.values()].filter((row) => row.v < threshold).map((row) => row.id) : ids;
          for (const id of doomed) m.rows.delete(id);
          record(w.snapshotId, w.deltaVersion);
          break;
        }
        case 'tag': {
          const name = `keep-${i}`;
          detail = `${name} on ${m.latest}`;
          committedOrThrow(await new Transaction(t.context, [setRef(name, m.latest!, 'tag')]).commit());
          m.tags.set(name, m.latest!);
          break;
        }
        case 'untag': {
          const name = r.pick([...m.tags.keys(), undefined]);
          detail = name ?? 'none';
          if (name === undefined) break;
          committedOrThrow(await new Transaction(t.context, [rawCommit({ requirements: [], updates: [{ action: 'remove-snapshot-ref', 'ref-name': name }] })]).commit());
          m.tags.delete(name);
          break;
        }
        case 'snapshot_expiry': {
          const retention = r.int(3, 7) * HOUR;
          detail = `retention ${retention / HOUR}h`;
          const res = await expireSnapshots(t, { retention });
          await expectExpiry(t, m, res, clock.t, retention);
          break;
        }
        case 'orphan_cleanup': {
          const planted = plantOrphans(dir);
          detail = `${planted.length} planted`;
          // Inside the safety window (they were just written), nothing planted goes.
          const young = await removeOrphans(t);
          expect(young.files.map((f) => f.path).filter((p) => planted.includes(p))).toEqual([]);
          expect(young.keptRecent).toBeGreaterThanOrEqual(planted.length);
          for (const p of planted) expect(existsSync(join(dir, p)), p).toBe(true);
          // Past it, the dry run lists every planted file, and the run removes what it listed.
          const now = Date.now() + 4 * DAY;
          const dry = await removeOrphans(t, { now, dryRun: true });
          const listed = dry.files.map((f) => f.path);
          for (const p of planted) expect(listed, p).toContain(p);
          const real = await removeOrphans(t, { now });
          expect(real.files.map((f) => f.path)).toEqual(listed);
          for (const p of listed) expect(existsSync(join(dir, p)), p).toBe(false);
          detail += `, ${listed.length} removed`;
          break;
        }
        case 'compaction': {
          const layout = r.pick(['none', 'sort', 'zorder'] as const);
          const opts: CompactOptions = layout === 'sort' ? { sort: ['v'] } : layout === 'zorder' ? { zorder: ['id', 'v'] } : {};
          if (r.next() < 0.5) opts.targetFileSize = r.pick([600, 2048, 1 << 20]);
          detail = JSON.stringify(opts);
          const c = await compact(t, opts);
          detail += `: ${c.filesBefore} → ${c.filesAfter} files`;
          expect(c.groupsSkipped).toBe(0);
          record(c.snapshotId, c.deltaVersion);
          break;
        }
        case 'metadata_cleanup': {
          const now = Date.now() + r.pick([2 * HOUR, 31 * DAY]);
          const c = await cleanMetadata(t, { now });
          detail = `${c.removed.files} removed (${Object.keys(c.byKind).join(', ') || 'none'})`;
          for (const f of c.files) expect(existsSync(join(dir, f.path)), f.path).toBe(false);
          break;
        }
        case 'delta_checkpoint': {
          const c = await runMaintenance(t, 'delta_checkpoint');
          detail = JSON.stringify({ version: (c as { deltaVersion: number }).deltaVersion });
          break;
        }
        case 'full_maintenance': {
          // Orphans planted and aged past the default window: full_maintenance's last step removes them.
          const planted = plantOrphans(dir);
          age(dir, planted, 4 * DAY);
          const retention = r.int(3, 7) * HOUR;
          detail = `retention ${retention / HOUR}h, ${planted.length} planted`;
          const res = (await runMaintenance(t, 'full_maintenance', { retention })) as FullMaintenanceResult;
          expect(res.steps.map((s) => s.status)).toEqual(['completed', 'completed', 'completed', 'completed', 'completed']);
          const compaction = res.steps[0]!.status === 'completed' ? (res.steps[0]!.result as { snapshotId?: bigint; deltaVersion?: number }) : {};
          record(compaction.snapshotId, compaction.deltaVersion);
          await expectExpiry(t, m, (res.steps[1] as { result: ExpireResult }).result, clock.t, retention);
          for (const p of planted) expect(existsSync(join(dir, p)), p).toBe(false);
          break;
        }
      }
      log.push(`${i}: ${kind} ${detail}`);
      await checkAgainstModel(t, m, dir, conn);
    } catch (e) {
      log.push(`${i}: ${kind} ${detail}  <-- failed`);
      const err = new Error(`workload seed ${seed} (${shape.name}) failed at step ${i} (${kind}): ${(e as Error).message}\nsteps so far:\n  ${log.join('\n  ')}`);
      err.stack = `${err.message}\n${(e as Error).stack ?? ''}`;
      throw err;
    }
  }
  if (process.env.TWINLAKE_WORKLOAD_LOG) console.log(`workload seed ${seed} (${shape.name}):\n  ${log.join('\n  ')}`);
  // The whole history agrees file by file across the formats.
  expect((await t.verify({ allVersions: true })).findings).toEqual([]);
  // Every kind of step ran.
  expect(new Set(steps)).toEqual(new Set([...WRITES, ...MAINTENANCE, ...(shape.evolutions.length ? ['evolve'] : [])]));
}

describe('randomized workload interleaved with every maintenance operation', () => {
  const tmp = tempDir();
  const clock = { t: Date.now() - 20 * DAY, nowMs: () => clock.t };
  let lake: Lakehouse;
  let db: DuckDBInstance;
  let conn: DuckDBConnection;
  beforeAll(async () => {
    lake = await Lakehouse.open({ warehouse: tmp.path, clock, onWarning: () => {} });
    db = await DuckDBInstance.create(':memory:');
    conn = await db.connect();
  });
  afterAll(async () => {
    conn?.closeSync();
    await lake?.close();
    tmp.cleanup();
  });

  for (const seed of SEEDS) {
    for (const shape of SHAPES) {
      test(`seed ${seed}, ${shape.name} table (format v${shape.formatVersion}): ${STEPS}+ steps, both formats equal the model after each`, async () => {
        await runWorkload(lake, clock, tmp.path, seed, shape, conn);
      }, 120_000);
    }
  }
});
