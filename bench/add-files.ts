import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Lakehouse } from '../src/index.ts';
import { fileUri } from '../src/core/uri.ts';
import { encodeManifestList } from '../src/format/iceberg/manifest-list.ts';
import { currentSchema, currentSnapshot, specById } from '../src/format/iceberg/table-metadata.ts';
import { deltaVersionOf } from '../src/format/dual/summary-keys.ts';
import { avroCodec, encodeManifestFile, readManifestEntries, readManifestList, syncMarker } from '../src/table/commit/manifest-io.ts';
import { encodeSnapshotVersion, followedInLineage } from '../src/format/dual/projection.ts';

/**
 * Issue goal 7: one commit adding many existing Parquet files (`Table.addFiles`). The files are
 * made by writing one tiny file with DuckDB's plain COPY (no field IDs, so they map by name) and
 * copying it `files` times into the table's `imported/` folder, 1,000 to a sub-folder; a commit
 * cares about how many files there are, not what is in them. Reading the footers (in parallel)
 * is reported apart from the commit: the Iceberg commit (manifest and manifest list writing
 * included) and the Delta version with its checkpoint.
 *
 * Where the commit's time goes: each step of it is run again alone, on the files the commit
 * added, through the same functions (the encoders, and writes through the table's store with its
 * fsync into a scratch folder).
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
    const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    console.log(`add-files of ${files} tiny files (one DuckDB COPY file copied ${files} times in ${(copyMs / 1000).toFixed(1)} s), bench/add-files.ts`);
    console.log(
      `  footers ${s(r.timings.footerMs)} (parallel); data-file records ${s(r.timings.dataFilesMs)}; commit ${s(commitMs)} = iceberg ${s(r.timings.icebergCommitMs)} + delta ${s(r.timings.deltaCommitMs)} + checkpoint ${s(r.timings.checkpointMs)}; whole call ${s(totalMs)}`,
    );

    const steps = await commitSteps(table.context, warehouse);
    console.log(`  the commit's steps, each run again alone: ${steps.map(([name, ms]) => `${name} ${ms.toFixed(0)} ms`).join(', ')}`);

    const rows = await table.count();
    const deltaRows = await table.count({ format: 'delta' });
    const icebergFiles = (await table.files()).files.length;
    const deltaFiles = (await table.files({ format: 'delta' })).files.length;
    const verify = await table.verify();
    console.log(
      `  read back: iceberg ${rows} rows in ${icebergFiles} files, delta ${deltaRows} rows in ${deltaFiles} files, expected ${files * 3 + 1} in ${files + 1}: ${rows === files * 3 + 1 && deltaRows === rows && icebergFiles === files + 1 && deltaFiles === icebergFiles ? 'YES' : 'NO'}; verify: ${verify.findings.length === 0 ? 'clean' : `${verify.findings.length} finding(s): ${verify.findings.map((f) => f.kind).join(', ')}`}`,
    );
    console.log(`  commit < 1 s: ${commitMs < 1000 ? 'MET' : 'NOT MET'} (${s(commitMs)})`);
  } finally {
    await lake.close();
    rmSync(warehouse, { recursive: true, force: true });
  }
}

type Ctx = ReturnType<Lakehouse['table']>['context'];

/** The commit of the current snapshot, step by step, as [step, milliseconds]. */
async function commitSteps(ctx: Ctx, warehouse: string): Promise<[string, number][]> {
  const { metadata } = await ctx.catalog.loadTable(ctx.ident);
  const snapshot = currentSnapshot(metadata)!;
  const out: [string, number][] = [];
  const time = async <T>(name: string, fn: () => T | Promise<T>): Promise<T> => {
    const start = performance.now();
    const result = await fn();
    out.push([name, performance.now() - start]);
    return result;
  };
  const list = await readManifestList(ctx.io, snapshot['manifest-list']);
  const own = list.filter((m) => m['added-snapshot-id'] === snapshot['snapshot-id'] && m['added-files-count'] > 0);
  const added = (await Promise.all(own.map((m) => readManifestEntries(ctx.io, m, metadata)))).flat();
  const entries = added.map((e) => ({ status: 1 as const, 'snapshot-id': snapshot['snapshot-id'], 'data-file': e['data-file'] }));
  const scratch = fileUri(join(warehouse, 'scratch'));
  const manifest = await time('manifest encoding', () =>
    encodeManifestFile(metadata, { schema: currentSchema(metadata), spec: specById(metadata, metadata['default-spec-id']), content: 0, entries }),
  );
  await time('manifest write', () => ctx.io.write(`${scratch}/manifest.avro`, manifest));
  const listBytes = await time('manifest list', () =>
    encodeManifestList({ formatVersion: metadata['format-version'], snapshotId: snapshot['snapshot-id'], parentSnapshotId: snapshot['parent-snapshot-id'], sequenceNumber: snapshot['sequence-number'], manifests: list, syncMarker: syncMarker(), codec: avroCodec(metadata) }),
  );
  await time('manifest list write', () => ctx.io.write(`${scratch}/list.avro`, listBytes));
  const changes = { added: added.map((e) => e['data-file']), removed: [], addedDeletes: [], removedDeletes: [], deleteTargets: [] };
  const follows = followedInLineage(metadata, snapshot, (deltaVersionOf(snapshot) ?? 1) - 1);
  const { bytes } = await time('delta commit bytes (adds with stats, straight from the data files)', () => encodeSnapshotVersion({ metadata, snapshot, follows, changes }));
  await time(`delta commit write (${(bytes.length / 1e6).toFixed(0)} MB)`, () => ctx.io.write(`${scratch}/commit.json`, bytes));
  await ctx.io.deleteQuietly([`${scratch}/manifest.avro`, `${scratch}/list.avro`, `${scratch}/commit.json`]);
  return out;
}
