import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { localPath } from '../../src/core/uri.ts';
import { indexById } from '../../src/format/iceberg/schema.ts';
import { specById } from '../../src/format/iceberg/table-metadata.ts';
import { applyTransform } from '../../src/format/iceberg/transforms.ts';
import { liveFiles } from '../../src/table/read/iceberg-scan.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

/**
 * Keys whose transform bounds their values (bucket[N], identity of a boolean) go from the input
 * straight into one partitioned COPY, with no staged copy of the rows: each partition is still
 * one file, every row sits in the partition Iceberg's transform gives it, and both formats read
 * every row back.
 */
describe('partitions bounded by their transforms', () => {
  const fx = lakehouseFixture();
  const rows = Array.from({ length: 3000 }, (_, i) => ({
    id: i,
    user_id: i % 29 === 0 ? null : (i * 7919) % 100_003 - 50_000,
    active: i % 31 === 0 ? null : i % 3 === 0,
    note: `n${i}`,
  }));

  for (const [name, partition, most] of [
    ['bucket', 'bucket(8, user_id)', 9],
    ['both', 'bucket(4, user_id), active', 15],
  ] as const) {
    it(`${partition}: one file per partition, each row where the transform puts it`, async () => {
      const t = fx.lake.table(`bounded.${name}`);
      await t.append(rows, { partition });
      for (const format of ['iceberg', 'delta'] as const) {
        expect((await t.read({ format })).map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(rows.map((r) => r.id));
      }
      const m = await t.metadata();
      const { data } = await liveFiles(fx.lake.io, m, m.snapshots.find((s) => s['snapshot-id'] === m['current-snapshot-id'])!);
      const tuples = data.map((f) => JSON.stringify(f.partition));
      expect(new Set(tuples).size).toBe(tuples.length);
      expect(data.length).toBeGreaterThan(most / 2);
      expect(data.length).toBeLessThanOrEqual(most);
      const spec = specById(m, m['default-spec-id']);
      const index = indexById(m.schemas.find((s) => s['schema-id'] === m['current-schema-id'])!);
      const db = await DuckDBInstance.create(':memory:');
      const c = await db.connect();
      let checked = 0;
      for (const file of data) {
        for (const r of (await c.runAndReadAll(`SELECT user_id, active FROM read_parquet('${localPath(file['file-path'])}', hive_partitioning = false)`)).getRowObjectsJS()) {
          for (const f of spec.fields) {
            const source = index.get(f['source-id'])!;
            expect(file.partition[f.name]).toEqual(applyTransform(f.transform, source.field.type, r[source.field.name] as never));
          }
          checked++;
        }
      }
      expect(checked).toBe(rows.length);
      c.closeSync();
    });
  }
});
