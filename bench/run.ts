import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Lakehouse } from '../src/index.ts';
import { eventsFile } from './data.ts';

/**
 * Benchmarks, each against a baseline measured in the same run:
 * 1. `twinlake write` of a 1M-row NDJSON file vs DuckDB's own COPY of the same file to Parquet
 *    (the floor: DuckDB is our encoder). Goal: within 1.25x.
 * 2. Commit latency of commits 1–10 vs 491–500 in a 500-commit run. Goal: last ≤ 1.5x first.
 */
const root = resolve('.tmp/bench');
mkdirSync(root, { recursive: true });
const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const commits = Number(process.env.BENCH_COMMITS ?? 500);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function duckdbCopy(input: string, out: string): Promise<number> {
  rmSync(out, { force: true });
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const t0 = performance.now();
  await c.run(`COPY (SELECT * FROM read_json('${input}')) TO '${out}' (FORMAT parquet)`);
  const ms = performance.now() - t0;
  c.closeSync();
  return ms;
}

function cliWrite(warehouse: string, input: string): number {
  rmSync(warehouse, { recursive: true, force: true });
  const t0 = performance.now();
  execFileSync(process.execPath, ['bin/twinlake.mjs', '--warehouse', warehouse, 'write', 'bench.events', '--input', input], { stdio: 'pipe' });
  return performance.now() - t0;
}

async function writeBench(): Promise<void> {
  const input = await eventsFile(join(root, `events-${rows}.ndjson`), rows);
  const duck: number[] = [];
  const ours: number[] = [];
  for (let i = 0; i < 3; i++) {
    duck.push(await duckdbCopy(input, join(root, 'duckdb-copy.parquet')));
    ours.push(cliWrite(join(root, 'wh-write'), input));
  }
  const ratio = median(ours) / median(duck);
  console.log(`write ${rows} rows (NDJSON → Parquet), median of 3`);
  console.log(`  duckdb COPY            ${median(duck).toFixed(0)} ms`);
  console.log(`  twinlake write (CLI)   ${median(ours).toFixed(0)} ms   ratio ${ratio.toFixed(2)}x   goal ≤ 1.25x ${ratio <= 1.25 ? 'MET' : 'NOT MET'}`);
}

async function commitBench(): Promise<void> {
  const warehouse = join(root, 'wh-commits');
  rmSync(warehouse, { recursive: true, force: true });
  const lake = await Lakehouse.open({ warehouse, onWarning: (m) => console.error(m) });
  const table = lake.table('bench.commits');
  // The table is created first, so every timed commit is an append to an existing table.
  await table.append([{ id: -1, v: 'create' }]);
  const times: number[] = [];
  for (let i = 0; i < commits; i++) {
    const batch = Array.from({ length: 10 }, (_, j) => ({ id: i * 10 + j, v: `row ${i}` }));
    const t0 = performance.now();
    await table.append(batch);
    times.push(performance.now() - t0);
  }
  await lake.close();
  const first = mean(times.slice(0, 10));
  const last = mean(times.slice(-10));
  const ratio = last / first;
  console.log(`commit latency, ${commits} appends of 10 rows (each: encode + iceberg commit + delta commit)`);
  console.log(`  commits 1-10     mean ${first.toFixed(1)} ms`);
  console.log(`  commits ${commits - 9}-${commits}  mean ${last.toFixed(1)} ms   ratio ${ratio.toFixed(2)}x   goal ≤ 1.5x ${ratio <= 1.5 ? 'MET' : 'NOT MET'}`);
}

const only = process.argv[2];
if (!only || only === 'write') await writeBench();
if (!only || only === 'commits') await commitBench();
