import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { localPath } from '../../src/core/uri.ts';
import type { LiveFiles } from '../../src/table/read/live-files.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

/** Rows through DuckDB over exactly the listed files, position delete files applied in SQL. */
async function duckdbCount(files: LiveFiles): Promise<number> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    let total = 0;
    for (const f of files.files) {
      const path = localPath(f.path);
      const posFiles = f.deletes.filter((d) => d.kind === 'position-deletes').map((d) => `'${localPath(d.path!)}'`);
      const sql = posFiles.length
        ? `SELECT count(*) AS n FROM read_parquet('${path}', file_row_number = true) AS r ANTI JOIN (SELECT pos FROM read_parquet([${posFiles.join(', ')}]) WHERE file_path = '${f.path}') AS d ON r.file_row_number = d.pos`
        : `SELECT count(*) AS n FROM read_parquet('${path}')`;
      const reader = await conn.runAndReadAll(sql);
      total += Number(reader.getRowObjects()[0]!.n);
    }
    return total;
  } finally {
    conn.closeSync();
  }
}

const live = (f: LiveFiles) => f.files.reduce((a, x) => a + x.records - x.deletes.reduce((b, d) => b + d.records, 0), 0);

describe('files: the live data files of a version, with their delete files', () => {
  const fx = lakehouseFixture();

  it('lists only live files after an overwrite, in both formats and at past versions', async () => {
    const t = fx.lake.table('lf.over');
    const first = await t.append(Array.from({ length: 10 }, (_, i) => ({ id: i })));
    await t.append([{ id: 100 }]);
    await t.overwrite([{ id: 1 }, { id: 2 }, { id: 3 }]);
    const onDisk = readdirSync(join(fx.warehouse, 'lf', 'over', 'data')).filter((f) => f.endsWith('.parquet'));
    expect(onDisk).toHaveLength(3); // a data/*.parquet glob would read 14 rows
    for (const format of ['iceberg', 'delta'] as const) {
      const files = await t.files({ format });
      expect(files.files).toHaveLength(1);
      expect(files.files[0]!.records).toBe(3);
      expect(await duckdbCount(files)).toBe(3);
    }
    const past = await t.files({ snapshotId: first.snapshotId });
    expect(past.files.map((f) => f.records)).toEqual([10]);
    expect((await t.files({ format: 'delta', version: 2 })).files.map((f) => f.records).sort()).toEqual([1, 10]);
    expect((await fx.lake.filesPath(join(fx.warehouse, 'lf', 'over'))).files.map((f) => f.path)).toEqual((await t.files()).files.map((f) => f.path));
  });

  it('names each file\'s position delete file (v2) and deletion vector (v3, Delta)', async () => {
    const v2 = fx.lake.table('lf.v2');
    await v2.append(Array.from({ length: 20 }, (_, i) => ({ id: i, part: i % 2 })), { properties: { 'format-version': '2', 'write.delete.mode': 'merge-on-read' }, partition: 'part' });
    await v2.delete('id < 5');
    const iceberg = await v2.files();
    expect(iceberg.files).toHaveLength(2);
    for (const f of iceberg.files) {
      expect(f.deletes).toHaveLength(1);
      expect(f.deletes[0]!.kind).toBe('position-deletes');
    }
    expect(live(iceberg)).toBe(15);
    expect(await duckdbCount(iceberg)).toBe(15);
    const delta = await v2.files({ format: 'delta' });
    expect(delta.files.every((f) => f.deletes.length === 1 && f.deletes[0]!.kind === 'deletion-vector' && f.deletes[0]!.path!.endsWith('.bin'))).toBe(true);
    expect(live(delta)).toBe(15);

    const v3 = fx.lake.table('lf.v3');
    await v3.append(Array.from({ length: 20 }, (_, i) => ({ id: i })), { properties: { 'write.merge.mode': 'merge-on-read' } });
    await v3.merge([{ id: 3 }, { id: 4 }, { id: 50 }], { keys: ['id'] });
    const files = await v3.files();
    expect(files.files).toHaveLength(2);
    const dv = files.files.flatMap((f) => f.deletes);
    expect(dv).toHaveLength(1);
    expect(dv[0]).toMatchObject({ kind: 'deletion-vector', records: 2 });
    expect(dv[0]!.path).toMatch(/\.puffin$/);
    expect(dv[0]!.offset).toBeGreaterThan(0);
    expect(live(files)).toBe(await v3.count());
    expect(live(await v3.files({ format: 'delta' }))).toBe(21);
  });
});
