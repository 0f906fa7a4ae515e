import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Lakehouse } from '../src/index.ts';
import { build } from './open.ts';

/**
 * Issue goal 3, second half: the commit of a 10-row append on a table that retains many snapshots
 * against the same on a table with 10. Both tables are made as the open bench makes them (the
 * large one mostly in process, see bench/open.ts), then take the same number of appends, each
 * timed as the commits bench times it (Iceberg commit + Delta version). What grows with the
 * retained snapshots is the metadata file, which every commit writes whole: its size is reported.
 */
export async function retainedBench(root: string, retained: number, commits: number): Promise<void> {
  const small = await appendsOn(await build(join(root, 'wh-retained-10'), 10), commits);
  const large = await appendsOn(await build(join(root, `wh-retained-${retained}`), retained), commits);
  const ratio = large.p50 / small.p50;
  const line = (label: string, r: typeof small, size: string) =>
    console.log(`  ${commits} appends on ${label}: commit p50 ${r.p50.toFixed(1)} ms (p90 ${r.p90.toFixed(1)}; iceberg p50 ${r.icebergP50.toFixed(1)}, delta p50 ${r.deltaP50.toFixed(1)}), metadata file ${size}`);
  line('10 snapshots', small, `${(small.metadataBytes / 1e3).toFixed(0)} kB`);
  line(`${retained} snapshots`, large, `${(large.metadataBytes / 1e6).toFixed(1)} MB (${Math.round(large.metadataBytes / retained)} bytes per snapshot, written whole and fsynced by every commit)`);
  console.log(`  commit at ${retained} retained snapshots vs 10: ${ratio.toFixed(2)}x   goal ≤ 3x ${ratio <= 3 ? 'MET' : 'NOT MET'}`);
}

async function appendsOn(table: { warehouse: string }, commits: number) {
  const lake = await Lakehouse.open({ warehouse: table.warehouse, onWarning: (m) => console.error(m) });
  const t = lake.table('bench.open');
  const times: number[] = [];
  const iceberg: number[] = [];
  const delta: number[] = [];
  try {
    // One append first: the process's first commit also loads the engine and parses the metadata.
    await t.append([{ id: -1, v: 'warm' }]);
    for (let i = 0; i < commits; i++) {
      const r = await t.append(Array.from({ length: 10 }, (_, j) => ({ id: 1e9 + i * 10 + j, v: `append ${i}` })));
      times.push(r.timings.icebergCommitMs + r.timings.deltaCommitMs);
      iceberg.push(r.timings.icebergCommitMs);
      delta.push(r.timings.deltaCommitMs);
    }
  } finally {
    await lake.close();
  }
  const metadata = join(table.warehouse, 'bench', 'open', 'metadata');
  const newest = readdirSync(metadata).filter((f) => /^v\d+\.metadata\.json$/.test(f)).sort((x, y) => Number(x.slice(1, -14)) - Number(y.slice(1, -14))).at(-1)!;
  const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)]!;
  return { p50: pct(times, 0.5), p90: pct(times, 0.9), icebergP50: pct(iceberg, 0.5), deltaP50: pct(delta, 0.5), metadataBytes: statSync(join(metadata, newest)).size };
}
