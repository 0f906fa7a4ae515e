import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Lakehouse } from '../src/index.ts';

/**
 * Issue goal 4: planning a read (live files resolved, nothing read from the data) of a table with
 * many versions against the same table with 10, through each format. Every commit overwrites the
 * table with 10 rows, so the live data is one small file at any version count and only the
 * history grows: the Iceberg snapshots in the metadata file, the Delta commits and checkpoints
 * (with their tombstones). The tables are written by the library, one commit at a time; the time
 * that takes is reported. Each plan opens the warehouse afresh (cold: the catalog row, the
 * metadata file parsed, the Delta log listed and replayed) and then plans again in the same
 * process (warm: what a long-running reader pays).
 */
export async function openBench(root: string, versions: number): Promise<void> {
  const small = await build(join(root, 'wh-open-10'), 10);
  const large = await build(join(root, `wh-open-${versions}`), versions);
  console.log(`  setup: ${small.commits} commits in ${(small.ms / 1000).toFixed(1)} s; ${large.commits} commits in ${(large.ms / 1000).toFixed(1)} s (Iceberg metadata file ${(large.metadataBytes / 1e6).toFixed(1)} MB, ${large.deltaFiles} files in _delta_log)`);
  for (const format of ['iceberg', 'delta'] as const) {
    const a = await plans(small.warehouse, format);
    const b = await plans(large.warehouse, format);
    for (const kind of ['cold', 'warm'] as const) {
      const ratio = b[kind] / a[kind];
      console.log(
        `  plan, ${format.padEnd(7)} ${kind}: 10 versions ${a[kind].toFixed(1).padStart(7)} ms, ${versions} versions ${b[kind].toFixed(1).padStart(8)} ms   ${ratio.toFixed(2)}x   goal ≤ 2x ${ratio <= 2 ? 'MET' : 'NOT MET'}`,
      );
    }
  }
}

async function build(warehouse: string, versions: number) {
  rmSync(warehouse, { recursive: true, force: true });
  const lake = await Lakehouse.open({ warehouse, onWarning: () => {} });
  const table = lake.table('bench.open');
  const t0 = performance.now();
  for (let v = 0; v < versions; v++) await table.overwrite(Array.from({ length: 10 }, (_, i) => ({ id: v * 10 + i, v: `version ${v}` })));
  const ms = performance.now() - t0;
  const metadata = await table.metadata();
  const location = join(warehouse, 'bench', 'open');
  const hint = readdirSync(join(location, 'metadata')).filter((f) => /^v\d+\.metadata\.json$/.test(f)).sort((x, y) => Number(x.slice(1, -14)) - Number(y.slice(1, -14))).at(-1)!;
  await lake.close();
  if (metadata.snapshots.length !== versions) throw new Error(`open bench: expected ${versions} snapshots, found ${metadata.snapshots.length}`);
  return { warehouse, commits: versions, ms, metadataBytes: statSync(join(location, 'metadata', hint)).size, deltaFiles: readdirSync(join(location, '_delta_log')).length };
}

/** Median cold and warm plan times of 5 (each cold plan in a fresh Lakehouse). */
async function plans(warehouse: string, format: 'iceberg' | 'delta'): Promise<{ cold: number; warm: number }> {
  const cold: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < 5; i++) {
    const lake = await Lakehouse.open({ warehouse, readOnly: true });
    const table = lake.table('bench.open');
    let t0 = performance.now();
    const plan = await table.plan({ format });
    cold.push(performance.now() - t0);
    if (plan.task.files.length !== 1) throw new Error(`open bench: expected 1 live file, planned ${plan.task.files.length}`);
    t0 = performance.now();
    await table.plan({ format });
    warm.push(performance.now() - t0);
    await lake.close();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  return { cold: median(cold), warm: median(warm) };
}
