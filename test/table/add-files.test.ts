import { mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { contended, expectBothEqual, ids } from '../both-formats.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';
import { errorOf, listFiles, tempDir } from '../helpers.ts';

/** Writes `select` to `path` with DuckDB's own COPY (`options` e.g. FIELD_IDS), as another engine would. */
async function copyParquet(path: string, select: string, options = ''): Promise<void> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    await conn.run(`COPY (${select}) TO '${path}' (FORMAT parquet${options ? `, ${options}` : ''})`);
  } finally {
    conn.closeSync();
  }
}

function deltaAdds(tableDir: string): { path: string; stats: string; partitionValues: Record<string, string | null> }[] {
  const log = join(tableDir, '_delta_log');
  return readdirSync(log)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .flatMap((f) => readFileSync(join(log, f), 'utf8').trim().split('\n').map((l) => JSON.parse(l)))
    .filter((a) => a.add)
    .map((a) => a.add);
}

describe('add-files: existing Parquet files join both formats without a rewrite', () => {
  const fx = lakehouseFixture();

  it('adds files with field IDs and files without (mapped by name); both formats and DuckDB read them, with stats', async () => {
    const t = fx.lake.table('imp.basic');
    await t.append([{ id: 1, name: 'a' }]);
    const dir = join(fx.warehouse, 'imp', 'basic');
    mkdirSync(join(dir, 'imported'));
    await copyParquet(join(dir, 'imported', 'with-ids.parquet'), "SELECT (10 + i)::BIGINT AS id, 'w' || i AS name FROM range(3) t(i)", 'FIELD_IDS {id: 1, name: 2}');
    await copyParquet(join(dir, 'imported', 'plain.parquet'), "SELECT (20 + i)::BIGINT AS id, CASE WHEN i = 1 THEN NULL ELSE 'p' || i END AS name FROM range(4) t(i)");
    // Twinlake keeps the table's name mapping from its schema: the files without field IDs map through it.
    expect((await t.describe()).properties['twinlake.files-without-field-ids']).toBeUndefined();

    const r = await t.addFiles([join(dir, 'imported', '*.parquet')]);
    expect(r.files).toBe(2);
    expect(r.rows).toBe(7);
    expect(r.recordedNameMapping).toBe(false);
    expect((await t.describe()).properties['twinlake.files-without-field-ids']).toBe('true');
    expect(r.timings.footerMs).toBeGreaterThan(0);
    // Making the footers the table's data files is timed apart from reading them and from the commit.
    expect(r.timings.dataFilesMs).toBeGreaterThan(0);
    expect(r.timings.icebergCommitMs).toBeGreaterThan(0);
    await expectBothEqual(t, [1, 10, 11, 12, 20, 21, 22, 23]);
    const rows = await t.read({ where: 'id >= 20' });
    expect(rows.map((x) => x.name).sort()).toEqual(['p0', 'p2', 'p3', null].sort());
    expect((await t.read({ format: 'delta', where: 'id = 21' })).map((x) => x.name)).toEqual([null]);
    // The files stay where they are; nothing was copied into data/.
    const live = (await t.files()).files.map((f) => f.path).filter((p) => p.includes('/imported/')).sort();
    expect(live).toHaveLength(2);
    expect(live[0]).toMatch(/imported\/plain\.parquet$/);
    const mapping = JSON.parse((await t.describe()).properties['schema.name-mapping.default']!);
    expect(mapping).toEqual([
      { 'field-id': 1, names: ['id'] },
      { 'field-id': 2, names: ['name'] },
    ]);

    // Delta: relative add paths with stats from the footer, so Delta readers prune too.
    const adds = deltaAdds(dir).filter((a) => a.path.startsWith('imported/'));
    expect(adds.map((a) => a.path).sort()).toEqual(['imported/plain.parquet', 'imported/with-ids.parquet']);
    const plain = JSON.parse(adds.find((a) => a.path === 'imported/plain.parquet')!.stats);
    expect(plain).toMatchObject({ numRecords: 4, minValues: { id: 20, name: 'p0' }, maxValues: { id: 23, name: 'p3' }, nullCount: { id: 0, name: 1 } });
    // Iceberg prunes on the same bounds: a filter no added file can match reads only the original.
    const plan = await t.plan({ where: 'id = 1' });
    expect(plan.task.files).toHaveLength(1);
  });

  it('refuses a file whose schema does not fit, naming file, column, expected and found; nothing is committed', async () => {
    const t = fx.lake.table('imp.mismatch');
    await t.append([{ id: 1, name: 'a' }]);
    const dir = join(fx.warehouse, 'imp', 'mismatch');
    mkdirSync(join(dir, 'imported'));
    const good = join(dir, 'imported', 'good.parquet');
    const wrongType = join(dir, 'imported', 'wrong-type.parquet');
    const unknown = join(dir, 'imported', 'unknown.parquet');
    await copyParquet(good, "SELECT 5::BIGINT AS id, 'g' AS name");
    await copyParquet(wrongType, "SELECT 'x' AS id, 'n' AS name");
    await copyParquet(unknown, "SELECT 6::BIGINT AS id, 'n' AS name, 1.5::DOUBLE AS extra");
    const files = listFiles(dir);
    const snapshot = (await t.describe()).currentSnapshotId;

    const e1 = await errorOf(t.addFiles([good, wrongType]));
    expect(e1.kind).toBe('invalid-input');
    expect(e1.message).toBe(`add-files imp.mismatch: ${wrongType}: column id: expected long (BIGINT), found VARCHAR`);
    const e2 = await errorOf(t.addFiles([good, unknown]));
    expect(e2.message).toBe(`add-files imp.mismatch: ${unknown}: column extra (DOUBLE) is not a column of the table (matched by name); expected one of id, name`);
    expect(listFiles(dir)).toEqual(files);
    expect((await t.describe()).currentSnapshotId).toBe(snapshot);
    expect(ids(await t.read())).toEqual([1]);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([1]);
  });

  it('refuses a file outside the table location and a file added twice', async () => {
    const t = fx.lake.table('imp.refuse');
    await t.append([{ id: 1, name: 'a' }]);
    const dir = join(fx.warehouse, 'imp', 'refuse');
    const outside = tempDir();
    try {
      const far = join(outside.path, 'far.parquet');
      await copyParquet(far, "SELECT 2::BIGINT AS id, 'f' AS name");
      const e = await errorOf(t.addFiles([far]));
      expect(e.message).toContain(`add-files imp.refuse: ${far}: not inside the table's location`);
      expect(e.message).toContain('must be below the table root');
    } finally {
      outside.cleanup();
    }
    mkdirSync(join(dir, 'imported'));
    const once = join(dir, 'imported', 'once.parquet');
    await copyParquet(once, "SELECT 3::BIGINT AS id, 'o' AS name");
    await t.addFiles([once]);
    const files = listFiles(dir);
    const e = await errorOf(t.addFiles([once]));
    expect(e.message).toBe(`add-files imp.refuse: ${once}: already a live file of the table; a file is added once`);
    const data = readdirSync(join(dir, 'data'))[0]!;
    const e2 = await errorOf(t.addFiles([join(dir, 'data', data)]));
    expect(e2.message).toMatch(/already a live file of the table/);
    expect(listFiles(dir)).toEqual(files);
    await expectBothEqual(t, [1, 3]);
  });

  it('a file another add-files commits first, between our check and our commit, is refused when we check again', async () => {
    const t = fx.lake.table('imp.race');
    await t.append([{ id: 1, name: 'a' }]);
    const dir = join(fx.warehouse, 'imp', 'race');
    mkdirSync(join(dir, 'imported'));
    const file = join(dir, 'imported', 'shared.parquet');
    await copyParquet(file, "SELECT 2::BIGINT AS id, 's' AS name");
    // The rival adds the same file just before our first commit attempt reaches the catalog.
    const rival = await Lakehouse.open({ warehouse: fx.warehouse });
    const shared = await Lakehouse.open({ warehouse: fx.warehouse });
    const catalog = contended(shared.catalog, async () => void (await rival.table('imp.race').addFiles([file])), 1);
    const lake = await Lakehouse.open({ warehouse: fx.warehouse, catalog });
    try {
      const e = await errorOf(lake.table('imp.race').addFiles([file]));
      expect(e.message).toBe(`add-files imp.race: ${file}: already a live file of the table; a file is added once`);
      expect(catalog.commits).toBe(1);
      await expectBothEqual(t, [1, 2]);
    } finally {
      await Promise.all([lake.close(), rival.close(), shared.close()]);
    }
  });

  it('a schema change committed between our check and our commit: the footers are read again and checked against the new schema', async () => {
    const t = fx.lake.table('imp.shape');
    await t.append([{ id: 1, name: 'a' }]);
    const dir = join(fx.warehouse, 'imp', 'shape');
    mkdirSync(join(dir, 'imported'));
    const file = join(dir, 'imported', 'f.parquet');
    await copyParquet(file, "SELECT 2::BIGINT AS id, 's' AS name");
    // The rival adds a column just before our first commit attempt reaches the catalog.
    const rival = await Lakehouse.open({ warehouse: fx.warehouse });
    const shared = await Lakehouse.open({ warehouse: fx.warehouse });
    const catalog = contended(shared.catalog, async () => void (await rival.table('imp.shape').append([{ id: 3, name: 'c', extra: 'x' }])), 1);
    const lake = await Lakehouse.open({ warehouse: fx.warehouse, catalog });
    try {
      const r = await lake.table('imp.shape').addFiles([file]);
      expect(r.files).toBe(1);
      expect(catalog.commits).toBe(2);
      await expectBothEqual(t, [1, 2, 3]);
      const rows = await t.read();
      expect(rows.find((row) => row.id === 2n || row.id === 2)).toMatchObject({ name: 's', extra: null });
    } finally {
      await Promise.all([lake.close(), rival.close(), shared.close()]);
    }
  });

  it('identity partitions: a file with one value joins its partition; a file spanning values is refused', async () => {
    const t = fx.lake.table('imp.parts');
    await t.append([{ id: 1, region: 'us' }], { partition: 'region' });
    const dir = join(fx.warehouse, 'imp', 'parts');
    mkdirSync(join(dir, 'imported'));
    const eu = join(dir, 'imported', 'eu.parquet');
    const mixed = join(dir, 'imported', 'mixed.parquet');
    await copyParquet(eu, "SELECT (10 + i)::BIGINT AS id, 'eu' AS region FROM range(2) t(i)");
    await copyParquet(mixed, "SELECT (20 + i)::BIGINT AS id, CASE WHEN i = 0 THEN 'eu' ELSE 'us' END AS region FROM range(2) t(i)");
    const e = await errorOf(t.addFiles([mixed]));
    expect(e.message).toBe(`add-files imp.parts: ${mixed}: partition column region is not one value in the file (footer min eu, max us, nulls 0); a file goes into one identity partition`);
    await t.addFiles([eu]);
    await expectBothEqual(t, [1, 10, 11]);
    expect(ids(await t.read({ where: "region = 'eu'" }))).toEqual([10, 11]);
    expect(ids(await t.read({ format: 'delta', where: "region = 'eu'" }))).toEqual([10, 11]);
    expect(deltaAdds(dir).find((a) => a.path === 'imported/eu.parquet')!.partitionValues).toEqual({ region: 'eu' });
  });
});
