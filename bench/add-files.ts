import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Lakehouse } from '../src/index.ts';

/**
 * Issue goal 7: one commit adding many existing Parquet files (`Table.addFiles`). The files are
 * made by writing one tiny file with DuckDB's plain COPY (no field IDs, so they map by name) and
 * copying it `files` times into the table's `imported/` folder, 1,000 to a sub-folder; a commit
 * cares about how many files there are, not what is in them. Reading the footers (in parallel)
 * is reported apart from the commit: the Iceberg commit (manifest and manifest list writing
 * included) and the Delta version with its checkpoint.
 */
export async function addFilesBench(root: string, files: number): Promise<void> {
  const warehouse = join(root, 'wh-add-files');
  rmSync(warehouse, { recursive: true, force: true });
  const lake = await Lakehouse.open({ warehouse, onWarning: () => {} });
  try {
    const table = lake.table('bench.added');
    await table.append([{ id: 0, name: 'seed', ts: '2024-01-01T00:00:00Z' }]);
    const location = join(warehouse, 'bench', 'added');
    const one = join(root, 'add-files-one.parquet');
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    await conn.run(`COPY (SELECT (i + 1)::BIGINT AS id, 'n' || i AS name, TIMESTAMPTZ '2024-01-02 00:00:00+00' + INTERVAL (i) MINUTE AS ts FROM range(3) t(i)) TO '${one}' (FORMAT parquet)`);
    conn.closeSync();
    let t0 = performance.now();
    for (let i = 0; i < files; i++) {
      const dir = join(location, 'imported', `g${Math.floor(i / 1000)}`);
      if (i % 1000 === 0) mkdirSync(dir, { recursive: true });
      copyFileSync(one, join(dir, `f${i}.parquet`));
    }
    const copyMs = performance.now() - t0;
    t0 = performance.now();
    const r = await table.addFiles([join(location, 'imported', '*', '*.parquet')]);
    const totalMs = performance.now() - t0;
    const commitMs = r.timings.icebergCommitMs + r.timings.deltaCommitMs + r.timings.checkpointMs;
    const rows = await table.count();
    const deltaRows = await table.count({ format: 'delta' });
    console.log(`add-files of ${files} tiny files (one DuckDB COPY file copied ${files} times in ${(copyMs / 1000).toFixed(1)} s), bench/add-files.ts`);
    console.log(
      `  footers ${(r.timings.footerMs / 1000).toFixed(2)} s (parallel); commit ${(commitMs / 1000).toFixed(2)} s = iceberg ${(r.timings.icebergCommitMs / 1000).toFixed(2)} s + delta ${(r.timings.deltaCommitMs / 1000).toFixed(2)} s + checkpoint ${(r.timings.checkpointMs / 1000).toFixed(2)} s; whole call ${(totalMs / 1000).toFixed(2)} s`,
    );
    console.log(`  rows read back: iceberg ${rows}, delta ${deltaRows}, expected ${files * 3 + 1}: ${rows === files * 3 + 1 && deltaRows === rows ? 'YES' : 'NO'}`);
    console.log(`  commit < 1 s: ${commitMs < 1000 ? 'MET' : 'NOT MET'}`);
  } finally {
    await lake.close();
    rmSync(warehouse, { recursive: true, force: true });
  }
}
