import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { localPath } from '../../src/core/uri.ts';
import { POSITION_DELETE_FILE_PATH_ID, POSITION_DELETE_POS_ID } from '../../src/format/iceberg/schema.ts';
import { DataFileContent } from '../../src/format/iceberg/types.ts';
import { liveFiles } from '../../src/table/read/iceberg-scan.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

describe('position delete files', () => {
  const fx = lakehouseFixture();

  it('carry column sizes, value counts and null counts like data files, as the Parquet footer has them', async () => {
    const t = fx.lake.table('mor.metrics');
    await t.append(Array.from({ length: 200 }, (_, i) => ({ id: i, g: i % 2 })), { partition: 'g', properties: { 'format-version': '2', 'write.delete.mode': 'merge-on-read' } });
    await t.delete(`id IN (${Array.from({ length: 20 }, (_, i) => i * 5).join(', ')})`);
    const m = await t.metadata();
    const snapshot = m.snapshots!.find((s) => s['snapshot-id'] === m['current-snapshot-id'])!;
    const { deletes } = await liveFiles(fx.lake.io, m, snapshot);
    expect(deletes.length).toBe(2);
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      for (const d of deletes) {
        expect(d.content).toBe(DataFileContent.PositionDeletes);
        expect(d['value-counts']).toEqual(new Map([[POSITION_DELETE_FILE_PATH_ID, 10], [POSITION_DELETE_POS_ID, 10]]));
        expect(d['null-value-counts']).toEqual(new Map([[POSITION_DELETE_FILE_PATH_ID, 0], [POSITION_DELETE_POS_ID, 0]]));
        const footer = (await c.runAndReadAll(
          `SELECT path_in_schema AS name, sum(total_compressed_size)::INTEGER AS size FROM parquet_metadata('${localPath(d['file-path'])}') GROUP BY 1 ORDER BY 1`,
        )).getRowObjectsJS();
        expect(d['column-sizes']).toEqual(new Map(footer.map((r) => [r.name === 'file_path' ? POSITION_DELETE_FILE_PATH_ID : POSITION_DELETE_POS_ID, r.size])));
      }
    } finally {
      c.closeSync();
      db.closeSync();
    }
    expect((await t.read()).length).toBe(180);
  });
});
