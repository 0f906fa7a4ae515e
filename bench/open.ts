import { copyFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { newSnapshotId } from '../src/core/ids.ts';
import { localPath } from '../src/core/uri.ts';
import { checkpointInterval } from '../src/format/dual/delta-metadata.ts';
import { DELTA_VERSION_KEY } from '../src/format/dual/summary-keys.ts';
import { currentSchema, currentSnapshot } from '../src/format/iceberg/table-metadata.ts';
import { applyUpdates, type TableUpdate } from '../src/format/iceberg/updates.ts';
import { FileIO } from '../src/io/file-io.ts';
import type { ObjectStore } from '../src/io/object-store.ts';
import { storeForLocation } from '../src/io/store-for-uri.ts';
import { Lakehouse } from '../src/index.ts';
import { SnapshotProducer } from '../src/table/commit/snapshot-producer.ts';
import { writeDeltaCheckpoint } from '../src/table/delta/delta-checkpoint.ts';
import { catchUpDelta } from '../src/table/delta/delta-projection.ts';
import { liveFiles } from '../src/table/read/iceberg-scan.ts';

/**
 * Issue goal 4: planning a read (live files resolved, nothing read from the data) of a table with
 * many versions against the same table with 10, through each format. Every commit overwrites the
 * table with 10 rows, so the live data is one small file at any version count and only the
 * history grows: the Iceberg snapshots in the metadata file, the Delta commits and checkpoints
 * (with their tombstones). The small table is written by the library, one commit at a time; the
 * large one mostly in process (see `build`); the time either takes is reported. Three kinds of
 * plan: `new process` (a process of its own opens the warehouse and plans once, timed inside it:
 * nothing of the table is in memory, the files are in the OS cache: the cold open),
 * `new lakehouse` (a new Lakehouse in this process: the catalog row, the Iceberg metadata file
 * parsed, the Delta log from its checkpoint, whose decoded rows the process keeps while the file
 * is the same) and `warm` (the same Lakehouse planning again: the parsed Iceberg metadata is
 * reused while the catalog points at the same file; what a long-running reader pays).
 */
export async function openBench(root: string, versions: number): Promise<void> {
  const small = await build(join(root, 'wh-open-10'), 10);
  const large = await build(join(root, `wh-open-${versions}`), versions);
  console.log(
    `  setup: ${small.commits} commits in ${(small.ms / 1000).toFixed(1)} s; ${large.commits} commits${large.generated ? ` (${large.generated} generated in process)` : ''} in ${(large.ms / 1000).toFixed(1)} s (Iceberg metadata file ${(large.metadataBytes / 1e6).toFixed(1)} MB, ${large.deltaFiles} files in _delta_log)${large.verified}`,
  );
  for (const format of ['iceberg', 'delta'] as const) {
    const a = await plans(small.warehouse, format);
    const b = await plans(large.warehouse, format);
    for (const kind of ['new process', 'new lakehouse', 'warm'] as const) {
      const ratio = b[kind] / a[kind];
      console.log(
        `  plan, ${format.padEnd(7)} ${kind.padEnd(13)}: 10 versions ${a[kind].toFixed(1).padStart(7)} ms, ${versions} versions ${b[kind].toFixed(1).padStart(8)} ms   ${ratio.toFixed(2)}x   goal ≤ 2x ${ratio <= 2 ? 'MET' : 'NOT MET'}`,
      );
    }
  }
}

/**
 * The table at `versions` versions. Up to BENCH_REAL_COMMITS (100) it is built by the library,
 * one overwrite at a time. Beyond that the first commit is the library's and the rest are made
 * in process with the project's own writers, as a burst of commits at full speed would make
 * them: the SnapshotProducer writes each snapshot's manifests and list (an overwrite of the one
 * live file by a copy of it), the snapshots go to the catalog in one commit, then the Delta
 * catch-up of `sync` writes one version per snapshot and the checkpoint due at the newest. Only
 * the fsyncs are left out (a store that writes without them), and the table passes `verify`.
 */
export async function build(warehouse: string, versions: number) {
  rmSync(warehouse, { recursive: true, force: true });
  const lake = await Lakehouse.open({ warehouse, onWarning: () => {} });
  const table = lake.table('bench.open');
  const t0 = performance.now();
  const real = Math.min(versions, Number(process.env.BENCH_REAL_COMMITS ?? 100));
  const commitOne = (v: number) => table.overwrite(Array.from({ length: 10 }, (_, i) => ({ id: v * 10 + i, v: `version ${v}` })));
  if (versions <= real) for (let v = 0; v < versions; v++) await commitOne(v);
  else {
    await commitOne(0);
    await generateCommits(lake, versions - 1);
  }
  const ms = performance.now() - t0;
  const metadata = await table.metadata();
  const location = join(warehouse, 'bench', 'open');
  const hint = readdirSync(join(location, 'metadata')).filter((f) => /^v\d+\.metadata\.json$/.test(f)).sort((x, y) => Number(x.slice(1, -14)) - Number(y.slice(1, -14))).at(-1)!;
  let verified = '';
  if (versions > real && process.env.BENCH_VERIFY !== '0') {
    const v0 = performance.now();
    const result = await table.verify();
    if (!result.ok) throw new Error(`open bench: the generated table fails verify: ${JSON.stringify(result.remaining.slice(0, 3))}`);
    verified = `; verify ok in ${((performance.now() - v0) / 1000).toFixed(1)} s (${result.checked.snapshots} snapshots, ${result.checked.deltaVersions} Delta versions)`;
  }
  await lake.close();
  if (metadata.snapshots.length !== versions) throw new Error(`open bench: expected ${versions} snapshots, found ${metadata.snapshots.length}`);
  return {
    warehouse,
    commits: versions,
    generated: versions > real ? versions - 1 : 0,
    verified,
    ms,
    metadataBytes: statSync(join(location, 'metadata', hint)).size,
    deltaFiles: readdirSync(join(location, '_delta_log')).length,
  };
}

/** `count` more overwrites of the table, each replacing its live file by a fresh copy of it. */
async function generateCommits(lake: Lakehouse, count: number): Promise<void> {
  const ident = { namespace: ['bench'], name: 'open' };
  const io = new FileIO((uri) => {
    const { store, key } = storeForLocation(uri);
    return { store: new NoSyncStore(store), key };
  });
  let { metadata } = await lake.catalog.loadTable(ident);
  const first = currentSnapshot(metadata)!;
  const seed = (await liveFiles(io, metadata, first)).data[0]!;
  const seedPath = localPath(seed['file-path']);
  const updates: TableUpdate[] = [];
  const schema = currentSchema(metadata);
  const engine = { 'engine-name': first.summary['engine-name']!, 'engine-version': first.summary['engine-version']! };
  for (let v = 2; v <= count + 1; v++) {
    const path = seed['file-path'].replace(/[^/]+$/, `generated-${v}.parquet`);
    copyFileSync(seedPath, localPath(path));
    const producer = new SnapshotProducer(io, newSnapshotId(), { operation: 'overwrite', added: [{ ...seed, 'file-path': path }], replaceAll: true });
    const nowMs = metadata['last-updated-ms'] + 1;
    const { snapshot } = await producer.produce(metadata, nowMs, { schema, summaryExtra: { ...engine, [DELTA_VERSION_KEY]: String(v) } });
    const step: TableUpdate[] = [
      { action: 'add-snapshot', snapshot },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshot['snapshot-id'] },
    ];
    metadata = applyUpdates(metadata, step, { nowMs });
    updates.push(...step);
  }
  const committed = await lake.catalog.commitTable(ident, { requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': first['snapshot-id'] }], updates });
  if (committed.status !== 'committed') throw new Error(`open bench: the generated commits did not commit: ${committed.reason}`);
  const { written } = await catchUpDelta(io, committed.metadata);
  const interval = checkpointInterval(committed.metadata);
  const due = written.filter((v) => v % interval === 0);
  if (due.length > 0) await writeDeltaCheckpoint({ io, session: () => lake.session() }, committed.metadata.location, Math.max(...due));
}

/** A local store that writes without fsync (a bench table's history, not a commit being timed). */
class NoSyncStore implements ObjectStore {
  constructor(private readonly inner: ObjectStore) {}
  get root() {
    return this.inner.root;
  }
  get(path: string, range?: { offset: number; length: number }) {
    return this.inner.get(path, range);
  }
  head(path: string) {
    return this.inner.head(path);
  }
  list(prefix: string) {
    return this.inner.list(prefix);
  }
  delete(path: string) {
    return this.inner.delete(path);
  }
  localPath(path: string) {
    return this.inner.localPath!(path);
  }
  async put(path: string, body: Uint8Array | string) {
    const file = this.localPath(path)!;
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, body);
  }
  async putIfAbsent(path: string, body: Uint8Array | string) {
    const file = this.localPath(path)!;
    await mkdir(dirname(file), { recursive: true });
    try {
      await writeFile(file, body, { flag: 'wx' });
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
  }
}

/**
 * Median plan times of 5 of each kind (see openBench): a new process per plan, a new Lakehouse
 * per plan, and after each of those 5 warm ones (the first warm plans after a first one of
 * a large table pay for collecting the parse's garbage).
 */
async function plans(warehouse: string, format: 'iceberg' | 'delta'): Promise<{ 'new process': number; 'new lakehouse': number; warm: number }> {
  const cold: number[] = [];
  const warm: number[] = [];
  const processes: number[] = [];
  for (let i = 0; i < 5; i++) processes.push(planInProcess(warehouse, format));
  for (let i = 0; i < 5; i++) {
    const lake = await Lakehouse.open({ warehouse, readOnly: true });
    const table = lake.table('bench.open');
    const t0 = performance.now();
    const plan = await table.plan({ format });
    cold.push(performance.now() - t0);
    if (plan.task.files.length !== 1) throw new Error(`open bench: expected 1 live file, planned ${plan.task.files.length}`);
    for (let j = 0; j < 5; j++) {
      const t1 = performance.now();
      await table.plan({ format });
      warm.push(performance.now() - t1);
    }
    await lake.close();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { 'new process': median(processes), 'new lakehouse': median(cold), warm: median(warm) };
}

/** One plan in a process of its own (the built library, as `twinlake` runs it), timed inside it. */
function planInProcess(warehouse: string, format: 'iceberg' | 'delta'): number {
  const script = `import { Lakehouse } from ${JSON.stringify(pathToFileURL(resolve('dist/index.js')).href)};
const lake = await Lakehouse.open({ warehouse: ${JSON.stringify(warehouse)}, readOnly: true });
const t0 = performance.now();
const plan = await lake.table('bench.open').plan({ format: ${JSON.stringify(format)} });
const ms = performance.now() - t0;
await lake.close();
if (plan.task.files.length !== 1) throw new Error('expected 1 live file');
process.stdout.write(String(ms));`;
  return Number(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
}
