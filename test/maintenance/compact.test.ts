import { mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { localPath } from '../../src/core/uri.ts';
import { currentSnapshot } from '../../src/format/iceberg/table-metadata.ts';
import { compact } from '../../src/maintenance/compact.ts';
import type { Table } from '../../src/index.ts';
import { expectBothEqual, ids } from '../both-formats.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

/** Runs DuckDB statements in a fresh in-memory database (another engine's view of the files). */
async function duck<T = Record<string, unknown>>(sql: string): Promise<T[]> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    return (await conn.runAndReadAll(sql)).getRowObjectsJS() as T[];
  } finally {
    conn.closeSync();
  }
}

/** The actions of Delta commit `version` of the table at `dir`. */
function deltaActions(dir: string, version: number): Record<string, any>[] {
  const name = `${String(version).padStart(20, '0')}.json`;
  return readFileSync(join(dir, '_delta_log', name), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
}

const SCHEMA = {
  type: 'struct' as const,
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' as const },
    { id: 2, name: 'x', required: false, type: 'long' as const },
    { id: 3, name: 's', required: false, type: 'string' as const },
  ],
};

/** `n` tiny Parquet files of `rows` rows in all, written by DuckDB inside the table and added in one commit. */
async function manySmallFiles(t: Table, dir: string, n: number, rows: number): Promise<void> {
  await t.create(SCHEMA);
  mkdirSync(join(dir, 'imported'), { recursive: true });
  await duck(
    `COPY (SELECT i::BIGINT AS id, (i * 7919 % 1000)::BIGINT AS x, 'k' || (i % 97) AS s, i % ${n} AS f FROM range(${rows}) t(i)) ` +
      `TO '${join(dir, 'imported')}' (FORMAT parquet, PARTITION_BY (f), FIELD_IDS {id: 1, x: 2, s: 3})`,
  );
  const r = await t.addFiles([join(dir, 'imported', '**', '*.parquet')]);
  expect(r.files).toBe(n);
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const checksum = async (t: Table, format: 'iceberg' | 'delta', snapshot?: { snapshotId?: bigint; version?: number }) => {
  const rows = await t.read({ format, ...snapshot });
  return rows.reduce((a, r) => a + Number(r.x) * 31 + String(r.s).length, 0);
};

describe('compaction: bin-packing small files into files near the target size', () => {
  const fx = lakehouseFixture();

  it('1,000 tiny files become a few files near the target: same rows in both formats and in DuckDB, Delta dataChange false, time travel intact', async () => {
    const t = fx.lake.table('cmp.small');
    const dir = join(fx.warehouse, 'cmp', 'small');
    await manySmallFiles(t, dir, 1000, 20_000);
    const before = currentSnapshot(await t.metadata())!;
    const beforeVersion = (await t.plan({ format: 'delta' })).deltaVersion!;
    const sumBefore = await checksum(t, 'iceberg');
    const inputBytes = (await t.files()).files.reduce((a, f) => a + statSync(localPath(f.path)).size, 0);
    const target = 16 * 1024;

    const r = await compact(t, { targetFileSize: target });
    expect(r.filesBefore).toBe(1000);
    expect(r.filesRewritten).toBe(1000);
    expect(r.bytesRewritten).toBe(inputBytes);
    expect(r.groupsSkipped).toBe(0);
    expect(r.filesAfter).toBe(r.filesAdded);
    expect(r.filesAdded).toBeGreaterThan(1);
    expect(r.filesAdded).toBeLessThan(50);
    expect(r.rows).toBe(20_000);

    const live = (await t.files()).files;
    expect(live).toHaveLength(r.filesAfter);
    const sizes = live.map((f) => statSync(localPath(f.path)).size);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(r.bytesAdded);
    // Near the target: none above it, and (as the rows are cut into equal runs) none below half of it.
    for (const s of sizes) {
      expect(s).toBeLessThanOrEqual(target);
      expect(s).toBeGreaterThanOrEqual(target / 2);
    }
    await expectBothEqual(t, range(20_000));
    expect(await checksum(t, 'iceberg')).toBe(sumBefore);
    expect(await checksum(t, 'delta')).toBe(sumBefore);

    // Iceberg `replace`; Delta OPTIMIZE with every add and remove `dataChange: false`.
    const after = currentSnapshot(await t.metadata())!;
    expect(after.summary.operation).toBe('replace');
    expect(after['snapshot-id']).toBe(r.snapshotId);
    const actions = deltaActions(dir, r.deltaVersion!);
    const adds = actions.filter((a) => a.add).map((a) => a.add);
    const removes = actions.filter((a) => a.remove).map((a) => a.remove);
    expect(adds).toHaveLength(r.filesAdded);
    expect(removes).toHaveLength(1000);
    expect([...adds, ...removes].every((a) => a.dataChange === false)).toBe(true);
    expect(actions.find((a) => a.commitInfo)!.commitInfo.operation).toBe('OPTIMIZE');

    // The pre-compaction snapshot and version still read their rows from the old files.
    expect(ids(await t.read({ snapshotId: before['snapshot-id'] }))).toEqual(range(20_000));
    expect(ids(await t.read({ format: 'delta', version: beforeVersion }))).toEqual(range(20_000));
    expect(await checksum(t, 'delta', { version: beforeVersion })).toBe(sumBefore);
    expect((await t.files({ snapshotId: before['snapshot-id'] })).files).toHaveLength(1000);
    expect((await t.verify({ allVersions: true })).findings).toEqual([]);

    // Compacting again finds nothing to do: every file is near the target already.
    const again = await compact(t, { targetFileSize: target });
    expect(again).toMatchObject({ groups: 0, filesRewritten: 0, filesAfter: r.filesAfter });
    expect(currentSnapshot(await t.metadata())!['snapshot-id']).toBe(r.snapshotId);
  }, 60_000);

  it('a dry run reports the groups and commits nothing', async () => {
    const t = fx.lake.table('cmp.dry');
    const dir = join(fx.warehouse, 'cmp', 'dry');
    await manySmallFiles(t, dir, 20, 400);
    const snapshot = currentSnapshot(await t.metadata())!['snapshot-id'];
    const r = await compact(t, { dryRun: true, targetFileSize: 1 << 20 });
    expect(r).toMatchObject({ dryRun: true, filesBefore: 20, filesAfter: 20, groups: 1, filesRewritten: 20, filesAdded: 0 });
    expect(r.bytesRewritten).toBe((await t.files()).files.reduce((a, f) => a + statSync(localPath(f.path)).size, 0));
    expect(currentSnapshot(await t.metadata())!['snapshot-id']).toBe(snapshot);
    expect((await t.files()).files).toHaveLength(20);
  });

  it('compacts each partition on its own: one file per partition, holding only its rows', async () => {
    const t = fx.lake.table('cmp.parts');
    for (let b = 0; b < 5; b++) {
      await t.append(range(30).map((i) => ({ id: b * 30 + i, region: ['eu', 'us', 'ap'][i % 3] })), { partition: 'region' });
    }
    expect((await t.files()).files).toHaveLength(15);
    const r = await compact(t);
    expect(r).toMatchObject({ filesBefore: 15, filesRewritten: 15, filesAdded: 3, filesAfter: 3, groups: 3 });
    const live = (await t.files()).files;
    for (const f of live) {
      const regions = await duck<{ region: string }>(`SELECT DISTINCT region FROM read_parquet('${localPath(f.path)}')`);
      expect(regions).toHaveLength(1);
    }
    await expectBothEqual(t, range(150));
    // Both formats still prune by partition: a region filter reads one file.
    expect((await t.plan({ where: "region = 'eu'" })).task.files).toHaveLength(1);
    expect((await t.plan({ where: "region = 'eu'", format: 'delta' })).task.files).toHaveLength(1);
    expect(ids(await t.read({ where: "region = 'us'", format: 'delta' }))).toEqual(range(150).filter((i) => i % 30 % 3 === 1));
    const adds = readdirSync(join(fx.warehouse, 'cmp', 'parts', '_delta_log'))
      .filter((n) => n.endsWith('.json'))
      .sort()
      .flatMap((n) => readFileSync(join(fx.warehouse, 'cmp', 'parts', '_delta_log', n), 'utf8').trim().split('\n').map((l) => JSON.parse(l)))
      .filter((a) => a.add && a.add.dataChange === false)
      .map((a) => a.add.partitionValues.region)
      .sort();
    expect(adds).toEqual(['ap', 'eu', 'us']);
  });

  it.each(['2', '3'])('folds row-level deletes in (format v%s): deleted rows are not rewritten and their delete files go', async (version) => {
    const t = fx.lake.table(`cmp.mor${version}`);
    const properties = { 'format-version': version, 'write.delete.mode': 'merge-on-read' };
    for (let b = 0; b < 4; b++) await t.append(range(25).map((i) => ({ id: b * 25 + i })), { properties });
    await t.delete(`id IN (${range(10).map((i) => i * 10 + 3).join(', ')})`);
    const withDeletes = (await t.files()).files;
    expect(withDeletes.filter((f) => f.deletes.length > 0)).toHaveLength(4);
    const expected = range(100).filter((i) => i % 10 !== 3);
    const r = await compact(t);
    expect(r).toMatchObject({ filesRewritten: 4, filesAdded: 1, rows: 90, deletedRowsRemoved: 10, deleteFilesRemoved: 4 });
    const live = (await t.files()).files;
    const dv = (await t.files({ format: 'delta' })).files;
    expect(live.every((f) => f.deletes.length === 0)).toBe(true);
    expect(dv.every((f) => f.deletes.length === 0)).toBe(true);
    // expectBothEqual reads the live files with DuckDB too, which sees no deletes at all now.
    await expectBothEqual(t, expected);
    expect(live[0]!.records).toBe(90);
    // Every retained snapshot and Delta version agree file by file, deletes and rows included.
    expect((await t.verify({ allVersions: true })).findings).toEqual([]);
  });
});
