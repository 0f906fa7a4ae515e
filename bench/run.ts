import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Lakehouse } from '../src/index.ts';
import { eventsCsvFile, eventsFile } from './data.ts';
import { manyPartitions } from './many-partitions.ts';
import { manyWriters, type ManyWritersOptions, type ManyWritersResult } from './many-writers.ts';
import { readBench } from './read.ts';
import { openBench } from './open.ts';
import { addFilesBench } from './add-files.ts';
import { retainedBench } from './retained.ts';
import { serveBench } from './serve.ts';

/**
 * Benchmarks, each against a baseline measured in the same run:
 * 1. `write`: `twinlake write` of a 1M-row nested NDJSON file and of a 1M-row CSV file vs DuckDB's
 *    own COPY of the same file to zstd Parquet (the floor: DuckDB is our encoder), both as whole
 *    processes (goal ≤ 1.25x), and the library's append vs the same COPY in process (≤ 1.10x).
 *    `partitioned`: the same file by `day(ts)`, `bucket(16, user_id)` and both vs DuckDB's own
 *    partitioned COPY into as many partitions (≤ 1.5x).
 * 2. Commit latency of commits 1–10 vs 491–500 in a 500-commit run. Goal: last ≤ 1.5x first.
 * 3. `partitions`: one write into 10,000 hour partitions of a 12-column nested table under a
 *    512 MB engine memory limit; every row read back in both formats and by DuckDB over the live
 *    files; peak RSS. Run alone: `npm run bench partitions` (BENCH_PARTITION_ROWS, default 1M).
 * 4. `writers`: 8 processes × 50 appends on one table, and 4 merging + 4 appending processes
 *    (25 commits each), with the default commit retry settings, three runs each: every commit
 *    succeeds, Delta gap-free, every row once in both formats; commits per second. Run alone:
 *    `npm run bench writers`.
 * 5. `read`: reads of 1M rows, CLI to NDJSON/CSV and Table.read(), against DuckDB over the same
 *    files (bench/read.ts). Run alone: `npm run bench read`.
 * 6. `open`: planning a read of a table with BENCH_VERSIONS (10,000) versions vs 10, both formats
 *    (bench/open.ts). Run alone: `npm run bench open`.
 * 7. `cloud`: BENCH_CLOUD_GB (1) GB of NDJSON appended to an s3:// table on a RADOS Gateway the
 *    run starts; rows/s and peak RSS (bench/cloud.ts). Only when named: `npm run bench cloud`.
 * 8. `retained`: the commit of a 10-row append on a table with BENCH_RETAINED (10,000) snapshots
 *    vs one with 10 (bench/retained.ts; goal ≤ 3x). Run alone: `npm run bench retained`.
 */
const root = resolve('.tmp/bench');
mkdirSync(root, { recursive: true });
const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const commits = Number(process.env.BENCH_COMMITS ?? 500);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The middle of three or more runs and their spread (min–max), as the README reports them. */
interface Runs {
  median: number;
  min: number;
  max: number;
}

function runs(xs: number[]): Runs {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

const spread = (r: Runs) => `(${r.min.toFixed(0)}–${r.max.toFixed(0)})`;

/** One goal line: baseline ms, ours ms, ratio, goal, MET / NOT MET. */
function goalLine(label: string, base: Runs, ours: Runs, goal?: number): void {
  const ratio = ours.median / base.median;
  const verdict = goal === undefined ? '' : `   goal ≤ ${goal}x ${ratio <= goal ? 'MET' : 'NOT MET'}`;
  console.log(`  ${label.padEnd(48)} ${base.median.toFixed(0).padStart(6)} ms ${spread(base).padEnd(13)} ${ours.median.toFixed(0).padStart(6)} ms ${spread(ours).padEnd(13)} ${ratio.toFixed(2)}x${verdict}`);
}

function header(title: string): void {
  console.log(title);
  console.log(`  ${''.padEnd(48)} ${'baseline (spread)'.padEnd(23)} ${'ours (spread)'.padEnd(23)} ratio`);
}

type Format = 'ndjson' | 'csv';

const reader = (input: string, format: Format) => (format === 'csv' ? `read_csv('${input}')` : `read_json('${input}')`);

/** DuckDB's own COPY of the file to zstd Parquet in this process (the engine is warm, as the library's is). */
async function duckdbCopy(input: string, format: Format, out: string, partitionBy?: string): Promise<number> {
  rmSync(out, { recursive: true, force: true });
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const t0 = performance.now();
  await c.run(duckdbCopySql(input, format, out, partitionBy));
  const ms = performance.now() - t0;
  c.closeSync();
  return ms;
}

function duckdbCopySql(input: string, format: Format, out: string, partitionBy?: string): string {
  if (!partitionBy) return `COPY (SELECT * FROM ${reader(input, format)}) TO '${out}' (FORMAT parquet, COMPRESSION zstd)`;
  return `COPY (SELECT *, ${partitionBy} FROM ${reader(input, format)}) TO '${out}' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (${partitionKeysOf(partitionBy).join(', ')}))`;
}

/** The aliases of a `expr AS alias, ...` list. */
function partitionKeysOf(partitionBy: string): string[] {
  return [...partitionBy.matchAll(/ AS (\w+)/g)].map((m) => m[1]!);
}

/** The same COPY as a whole process of its own: Node, DuckDB's start and the COPY, as `twinlake write` is timed. */
function duckdbProcess(input: string, format: Format, out: string): number {
  rmSync(out, { force: true });
  const script = `import { DuckDBInstance } from '@duckdb/node-api'; const db = await DuckDBInstance.create(':memory:'); const c = await db.connect(); await c.run(${JSON.stringify(duckdbCopySql(input, format, out))});`;
  const t0 = performance.now();
  execFileSync(process.execPath, ['--input-type=module', '-e', script], { stdio: 'pipe' });
  return performance.now() - t0;
}

function cliWrite(warehouse: string, input: string): number {
  rmSync(warehouse, { recursive: true, force: true });
  const t0 = performance.now();
  execFileSync(process.execPath, ['bin/twinlake.mjs', '--warehouse', warehouse, 'write', 'bench.events', '--input', input], { stdio: 'pipe' });
  return performance.now() - t0;
}

async function libraryWrite(warehouse: string, input: string, partition?: string): Promise<{ ms: number; encodeMs: number; commitMs: number; files: number }> {
  rmSync(warehouse, { recursive: true, force: true });
  const lake = await Lakehouse.open({ warehouse });
  await lake.session();
  const t0 = performance.now();
  const r = await lake.table('bench.events').append({ path: input }, { partition });
  const ms = performance.now() - t0;
  await lake.close();
  const t = r.timings;
  return { ms, encodeMs: t.encodeMs, commitMs: t.icebergCommitMs + t.deltaCommitMs + t.checkpointMs, files: r.files };
}

/** Reads a written table back in both formats and checks it holds every input row once. */
async function checkReadBack(warehouse: string, rows: number): Promise<void> {
  const lake = await Lakehouse.open({ warehouse });
  try {
    const t = lake.table('bench.events');
    for (const format of ['iceberg', 'delta'] as const) {
      const n = await t.count({ format });
      if (n !== rows) throw new Error(`write bench: expected ${rows} rows read back by ${format}, found ${n}`);
    }
  } finally {
    await lake.close();
  }
}

/**
 * Issue goal: a partitioned write at most 1.5x DuckDB's own partitioned COPY of the same file
 * into the same number of partitions (date_trunc and a modulo stand in for Iceberg's day and
 * bucket transforms, which DuckDB lacks), in the same run.
 */
async function partitionedBench(): Promise<void> {
  const input = await eventsFile(join(root, `events-v2-${rows}.ndjson`), rows);
  const specs: [string, string][] = [
    ['day(ts)', "date_trunc('day', ts) AS k_day"],
    ['bucket(16, user_id)', 'user_id % 16 AS k_bucket'],
    ['day(ts), bucket(16, user_id)', "date_trunc('day', ts) AS k_day, user_id % 16 AS k_bucket"],
  ];
  const duck = new Map<string, number[]>(specs.map(([s]) => [s, []]));
  const ours = new Map<string, { ms: number[]; files: number }>(specs.map(([s]) => [s, { ms: [], files: 0 }]));
  for (let i = 0; i < 3; i++) {
    for (const [spec, sql] of specs) {
      duck.get(spec)!.push(await duckdbCopy(input, 'ndjson', join(root, 'duckdb-parted'), sql));
      const p = await libraryWrite(join(root, 'wh-parted'), input, spec);
      ours.get(spec)!.ms.push(p.ms);
      ours.get(spec)!.files = p.files;
    }
  }
  header(`partitioned write of ${rows} rows (NDJSON → Parquet), library vs DuckDB's COPY … PARTITION_BY, median of 3`);
  for (const [spec] of specs) {
    const r = ours.get(spec)!;
    goalLine(`${spec} (${r.files} files)`, runs(duck.get(spec)!), runs(r.ms), 1.5);
  }
}

async function writeBench(): Promise<void> {
  const files: [Format, string][] = [
    ['ndjson', await eventsFile(join(root, `events-v2-${rows}.ndjson`), rows)],
    ['csv', await eventsCsvFile(join(root, `events-v2-${rows}.csv`), rows)],
  ];
  for (const [format, input] of files) {
    const duckProcess: number[] = [];
    const duck: number[] = [];
    const cliMs: number[] = [];
    const lib: number[] = [];
    const encode: number[] = [];
    const commit: number[] = [];
    for (let i = 0; i < 3; i++) {
      duckProcess.push(duckdbProcess(input, format, join(root, 'duckdb-copy.parquet')));
      cliMs.push(cliWrite(join(root, 'wh-write'), input));
      duck.push(await duckdbCopy(input, format, join(root, 'duckdb-copy.parquet')));
      const l = await libraryWrite(join(root, 'wh-lib'), input);
      lib.push(l.ms);
      encode.push(l.encodeMs);
      commit.push(l.commitMs);
    }
    await checkReadBack(join(root, 'wh-lib'), rows);
    header(`write ${rows} rows (${format === 'csv' ? 'CSV' : 'nested NDJSON'} → zstd Parquet), median of 3; read back by both formats: ${rows} rows`);
    goalLine(`CLI \`twinlake write\` vs duckdb COPY, processes`, runs(duckProcess), runs(cliMs), 1.25);
    goalLine('library append vs duckdb COPY, in process', runs(duck), runs(lib), 1.1);
    const rest = lib.map((ms, i) => ms - encode[i]! - commit[i]!);
    console.log(`    of which: inference and planning ${median(rest).toFixed(0)} ms, encoding (strict, zstd, field IDs) ${median(encode).toFixed(0)} ms, commits ${median(commit).toFixed(0)} ms`);
  }
}

async function commitBench(): Promise<void> {
  const warehouse = join(root, 'wh-commits');
  rmSync(warehouse, { recursive: true, force: true });
  // Where a commit's time goes: every store call and SQLite statement is timed and filed under
  // the step it serves (by the file it touches), in the phase of the append it runs in. Calls
  // that run in parallel each count their own time, so a phase's steps may sum above its time.
  const { LocalStore } = await import('../src/io/local-store.ts');
  const { Transaction } = await import('../src/table/commit/transaction.ts');
  const { default: Database } = await import('better-sqlite3');
  type Phase = 'prepare' | 'iceberg' | 'delta';
  let phase: Phase = 'prepare';
  let timing = false;
  const steps = new Map<string, { calls: number; ms: number }>();
  // The same calls as intervals of wall time, per phase of the append under way: the timeline
  // below shows which steps run one after another, and how much of a phase no call covers (the
  // CPU work between them: encoding, serializing, applying updates).
  let calls: { phase: Phase; step: string; start: number; end: number }[] = [];
  const record = (step: string, ms: number) => {
    if (!timing) return;
    const s = steps.get(`${phase}|${step}`) ?? { calls: 0, ms: 0 };
    s.calls++;
    s.ms += ms;
    steps.set(`${phase}|${step}`, s);
    const end = performance.now();
    calls.push({ phase, step, start: end - ms, end });
  };
  const timeline = new Map<string, { at: number; span: number; n: number }>();
  const phaseWall = { iceberg: 0, delta: 0 };
  const phaseIo = { iceberg: 0, delta: 0 };
  let phaseStart = { iceberg: 0, delta: 0 };
  const covered = (xs: { start: number; end: number }[]) => {
    let total = 0;
    let until = -Infinity;
    for (const x of [...xs].sort((a, b) => a.start - b.start)) {
      if (x.end <= until) continue;
      total += x.end - Math.max(x.start, until);
      until = x.end;
    }
    return total;
  };
  const closeAppend = (end: number) => {
    const bounds = { iceberg: [phaseStart.iceberg, phaseStart.delta], delta: [phaseStart.delta, end] } as const;
    for (const p of ['iceberg', 'delta'] as const) {
      const mine = calls.filter((c) => c.phase === p);
      phaseWall[p] += bounds[p][1] - bounds[p][0];
      phaseIo[p] += covered(mine);
      for (const step of new Set(mine.map((c) => c.step))) {
        const of = mine.filter((c) => c.step === step);
        const t = timeline.get(`${p}|${step}`) ?? { at: 0, span: 0, n: 0 };
        t.at += Math.min(...of.map((c) => c.start)) - bounds[p][0];
        t.span += covered(of);
        t.n++;
        timeline.set(`${p}|${step}`, t);
      }
    }
    calls = [];
  };
  const kindOf = (key: string) => {
    const name = key.slice(key.lastIndexOf('/') + 1);
    if (name === '_last_checkpoint') return 'delta _last_checkpoint';
    if (/^\d{20}\.checkpoint/.test(name)) return 'delta checkpoint';
    if (/^\d{20}\.json$/.test(name)) return 'delta commit';
    if (key.includes('_delta_log')) return 'delta log';
    if (name.startsWith('snap-')) return 'manifest list';
    if (name.endsWith('.avro')) return 'manifest';
    if (name.endsWith('.metadata.json')) return 'metadata json';
    if (name === 'version-hint.text') return 'version hint';
    if (name.endsWith('.parquet')) return 'data file';
    return `other (${name})`;
  };
  const proto = LocalStore.prototype as unknown as Record<string, (...a: unknown[]) => unknown>;
  const originals: [string, (...a: unknown[]) => unknown][] = [];
  for (const op of ['get', 'head', 'put', 'putIfAbsent', 'putFile', 'delete'] as const) {
    const f = proto[op]!;
    originals.push([op, f]);
    proto[op] = async function (this: unknown, ...a: unknown[]) {
      const t = performance.now();
      try {
        return await f.apply(this, a);
      } finally {
        record(`${op} ${kindOf(String(a[0]))}`, performance.now() - t);
      }
    };
  }
  const list = proto.list!;
  originals.push(['list', list]);
  proto.list = async function* (this: unknown, prefix: unknown) {
    const t = performance.now();
    let n = 0;
    for await (const o of list.call(this, prefix) as AsyncIterable<unknown>) {
      n++;
      yield o;
    }
    record(`list ${kindOf(String(prefix))}`, performance.now() - t);
  };
  const statement = Object.getPrototypeOf(new Database(':memory:').prepare('SELECT 1')) as Record<string, (...a: unknown[]) => unknown>;
  const sqlOriginals: [string, (...a: unknown[]) => unknown][] = [];
  for (const op of ['run', 'get', 'all'] as const) {
    const f = statement[op]!;
    sqlOriginals.push([op, f]);
    statement[op] = function (this: { source: string }, ...a: unknown[]) {
      const t = performance.now();
      try {
        return f.apply(this, a);
      } finally {
        record(`sqlite ${this.source.trim().split(/\s+/)[0]!.toLowerCase()}`, performance.now() - t);
      }
    };
  }
  const txnCommit = Transaction.prototype.commit;
  Transaction.prototype.commit = async function (this: InstanceType<typeof Transaction>, ...a: Parameters<typeof txnCommit>) {
    phase = 'iceberg';
    phaseStart.iceberg = performance.now();
    try {
      return await txnCommit.apply(this, a);
    } finally {
      phase = 'delta';
      phaseStart.delta = performance.now();
    }
  };

  const lake = await Lakehouse.open({ warehouse, onWarning: (m) => console.error(m) });
  const table = lake.table('bench.commits');
  // The table is created first, so every timed commit is an append to an existing table.
  await table.append([{ id: -1, v: 'create' }]);
  const total: number[] = [];
  const commit: number[] = [];
  const iceberg: number[] = [];
  const delta: number[] = [];
  const checkpoint: number[] = [];
  const encode: number[] = [];
  // The floor, measured between the commits on the same disk and not by the code under test: one
  // new 2 kB file written and fsynced (open, write, fsync, close). A commit needs at least five
  // fsyncs one after another (its files, their folder, the catalog swap, the Delta version, its
  // folder), so its time in floors says what the disk allowed while the machine was shared.
  const floorDir = join(root, 'wh-commits-floor');
  rmSync(floorDir, { recursive: true, force: true });
  mkdirSync(floorDir, { recursive: true });
  const floorWrite = async (i: number) => {
    const h = await open(join(floorDir, `floor-${i}`), 'wx');
    try {
      await h.writeFile('x'.repeat(2000));
      await h.sync();
    } finally {
      await h.close();
    }
  };
  const floor: number[] = [];
  const slowest: { i: number; ms: number; iceberg: number; delta: number; calls: string[] }[] = [];
  try {
    timing = true;
    for (let i = 0; i < commits; i++) {
      const batch = Array.from({ length: 10 }, (_, j) => ({ id: i * 10 + j, v: `row ${i}` }));
      phase = 'prepare';
      calls = [];
      const t0 = performance.now();
      const r = await table.append(batch);
      const t1 = performance.now();
      const mine = calls.filter((c) => c.phase !== 'prepare').sort((a, b) => b.end - b.start - (a.end - a.start));
      closeAppend(t1);
      total.push(t1 - t0);
      const ms = r.timings.icebergCommitMs + r.timings.deltaCommitMs;
      commit.push(ms);
      iceberg.push(r.timings.icebergCommitMs);
      delta.push(r.timings.deltaCommitMs);
      checkpoint.push(r.timings.checkpointMs);
      encode.push(r.timings.encodeMs);
      slowest.push({ i, ms, iceberg: r.timings.icebergCommitMs, delta: r.timings.deltaCommitMs, calls: mine.slice(0, 3).map((c) => `${c.step} ${(c.end - c.start).toFixed(1)}`) });
      slowest.sort((a, b) => b.ms - a.ms).splice(5);
      timing = false;
      const f0 = performance.now();
      await floorWrite(i);
      floor.push(performance.now() - f0);
      timing = true;
    }
  } finally {
    timing = false;
    for (const [op, f] of originals) proto[op] = f;
    for (const [op, f] of sqlOriginals) statement[op] = f;
    Transaction.prototype.commit = txnCommit;
  }
  const rows = await table.count();
  await lake.close();
  if (rows !== commits * 10 + 1) throw new Error(`commit bench: expected ${commits * 10 + 1} rows, read ${rows}`);
  // Medians resist the odd slow fsync on a shared disk; means are shown beside them.
  const report = (label: string, xs: number[], goal?: number, stat: (w: number[]) => number = median) => {
    const first = xs.slice(0, 10);
    const last = xs.slice(-10);
    const ratio = stat(last) / Math.max(stat(first), 1e-9);
    const verdict = goal === undefined ? '' : `   goal ≤ ${goal}x ${ratio <= goal ? 'MET' : 'NOT MET'}`;
    const cell = (w: number[]) => (stat === mean ? `${mean(w).toFixed(1).padStart(14)}` : `${median(w).toFixed(1).padStart(6)} (${mean(w).toFixed(1).padStart(5)})`);
    console.log(`  ${label.padEnd(44)} ${cell(first)} ms  ${cell(last)} ms   ${ratio.toFixed(2)}x${verdict}`);
  };
  console.log(`commit latency over ${commits} appends of 10 rows, median (mean)   commits 1-10       ${commits - 9}-${commits}`);
  report('commit (iceberg snapshot + delta version)', commit, 1.5);
  report('whole append (encode + commit + checkpoint)', total);
  // One commit in ten writes a checkpoint, so only the mean says anything here.
  report('delta checkpoint (every 10th version), mean', checkpoint, undefined, mean);
  const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
  const goal = (label: string, xs: number[], p: number, limit: number) =>
    console.log(`  ${label.padEnd(44)} p${p} ${pct(xs, p).toFixed(1).padStart(6)} ms   goal ≤ ${limit} ms ${pct(xs, p) <= limit ? 'MET' : 'NOT MET'}`);
  goal('commit of a 10-row append, all commits', commit, 50, 5);
  goal('commit of a 10-row append, all commits', commit, 99, 20);
  console.log(`  floor (one new 2 kB file written and fsynced, between commits) p50 ${pct(floor, 50).toFixed(2)} / p99 ${pct(floor, 99).toFixed(2)} ms; commit p50 ${(pct(commit, 50) / pct(floor, 50)).toFixed(1)} floors`);
  console.log(`  slowest commits (append number, ms, iceberg + delta, their longest calls):`);
  for (const s of slowest) console.log(`    #${s.i} ${s.ms.toFixed(1)} ms = ${s.iceberg.toFixed(1)} + ${s.delta.toFixed(1)}: ${s.calls.join(', ')}`);
  console.log(`  p50 / p99 ms: iceberg commit ${pct(iceberg, 50).toFixed(1)} / ${pct(iceberg, 99).toFixed(1)}, delta version ${pct(delta, 50).toFixed(1)} / ${pct(delta, 99).toFixed(1)}, whole append ${pct(total, 50).toFixed(1)} / ${pct(total, 99).toFixed(1)} (encode ${pct(encode, 50).toFixed(1)}, checkpoint mean ${mean(checkpoint).toFixed(1)})`);
  console.log(`  per step, per append (calls, ms summed over calls; mean of ${commits} appends):`);
  for (const p of ['prepare', 'iceberg', 'delta'] as const) {
    const mine = [...steps].filter(([k]) => k.startsWith(`${p}|`)).sort((a, b) => b[1].ms - a[1].ms);
    const sum = mine.reduce((a, [, s]) => a + s.ms, 0) / commits;
    console.log(`    ${p === 'prepare' ? 'load, repair, encode' : p === 'iceberg' ? 'iceberg commit' : 'delta + checkpoint'} (store and sqlite calls ${sum.toFixed(2)} ms)`);
    for (const [k, s] of mine) console.log(`      ${k.slice(p.length + 1).padEnd(40)} ${(s.calls / commits).toFixed(2).padStart(6)} × ${(s.ms / commits).toFixed(2).padStart(6)} ms`);
  }
  console.log(`  timeline of a commit (mean of ${commits}; a step starts at +ms into its phase and its calls cover ms of wall time):`);
  for (const p of ['iceberg', 'delta'] as const) {
    const wall = phaseWall[p] / commits;
    const io = phaseIo[p] / commits;
    console.log(`    ${p === 'iceberg' ? 'iceberg commit (manifests, metadata file, swap)' : 'delta version, hint, checkpoint'}: ${wall.toFixed(2)} ms, of which store and sqlite calls cover ${io.toFixed(2)} ms, the rest (CPU between them) ${(wall - io).toFixed(2)} ms`);
    const mine = [...timeline].filter(([k]) => k.startsWith(`${p}|`)).sort((a, b) => a[1].at / a[1].n - b[1].at / b[1].n);
    for (const [k, t] of mine) console.log(`      +${(t.at / t.n).toFixed(2).padStart(5)} ms  ${k.slice(p.length + 1).padEnd(36)} ${(t.span / commits).toFixed(2).padStart(6)} ms${t.n < commits ? `  (in ${t.n} of ${commits})` : ''}`);
  }
}

async function partitionsBench(): Promise<void> {
  const dir = join(root, 'partitions');
  rmSync(join(dir, 'warehouse'), { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const partitionRows = Number(process.env.BENCH_PARTITION_ROWS ?? 1_000_000);
  const r = await manyPartitions({ dir, rows: partitionRows, hours: 10_000, memoryLimit: '512MB', threads: 2 });
  const ok = Object.values(r.read).every((t) => JSON.stringify(t, (_, v) => (typeof v === 'bigint' ? String(v) : v)) === JSON.stringify(r.expected, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
  console.log(`write of ${partitionRows} rows into 10,000 partitions (hour(order_ts), 12 columns, nested), engine memory limit 512 MB, 2 threads`);
  console.log(`  ${r.partitions} partitions in ${r.files} files, ${r.misplacedFiles} files outside their partition, write ${(r.writeMs / 1000).toFixed(1)} s, peak RSS ${r.peakRssMb} MB`);
  for (const [reader, t] of Object.entries(r.read)) console.log(`  ${reader.padEnd(14)} ${t.rows} rows, ${t.distinctIds} distinct ids, ${t.items} items`);
  console.log(`  every row in every reader: ${ok && r.misplacedFiles === 0 ? 'YES' : 'NO'}`);
  rmSync(join(dir, 'warehouse'), { recursive: true, force: true });
}

/** Whether a many-writers run kept every commit and every row, in both formats. */
function allGreen(r: ManyWritersResult, seeded: boolean): boolean {
  const snapshots = r.commits + (seeded ? 1 : 0);
  const same = (a: unknown[], b: unknown[]) => JSON.stringify(a) === JSON.stringify(b);
  return (
    r.writers.every((w) => w.code === 0) &&
    same(r.deltaVersionsOfSnapshots, Array.from({ length: snapshots }, (_, i) => i + 1)) &&
    same(r.deltaLog, Array.from({ length: snapshots + 1 }, (_, i) => i)) &&
    Object.values(r.read).every((f) => same(f.appendedKeys, r.expectedKeys) && same(f.mergedIds, r.expectedIds) && f.rows === r.expectedKeys.length + r.expectedIds.length)
  );
}

async function writersBench(): Promise<void> {
  const runs: [string, Omit<ManyWritersOptions, 'warehouse'>][] = [
    ['8 appenders × 50', { appenders: 8, batches: 50, rows: 5 }],
    ['4 mergers × 25 + 4 appenders × 25', { appenders: 4, batches: 25, rows: 5, mergers: 4, rounds: 25 }],
  ];
  for (const [name, opts] of runs) {
    for (let run = 1; run <= 3; run++) {
      const warehouse = join(root, 'writers');
      rmSync(warehouse, { recursive: true, force: true });
      const r = await manyWriters({ warehouse, ...opts });
      const failed = r.writers.filter((w) => w.code !== 0);
      console.log(
        `${name}, run ${run}: ${r.commits} commits in ${(r.ms / 1000).toFixed(1)} s = ${r.commitsPerSecond.toFixed(1)} commits/s; ` +
          `all committed, Delta gap-free, every row once in both formats: ${allGreen(r, (opts.mergers ?? 0) > 0) ? 'YES' : 'NO'}` +
          (failed.length ? `\n  failed: ${failed.map((w) => `${w.name}: ${w.stderr.trim().split('\n').at(-1)}`).join('; ')}` : ''),
      );
      rmSync(warehouse, { recursive: true, force: true });
    }
  }
}

const only = process.argv[2];
if (!only || only === 'write') await writeBench();
if (!only || only === 'partitioned') await partitionedBench();
if (!only || only === 'commits') await commitBench();
if (!only || only === 'merge') await (await import('./merge.ts')).mergeBench(root);
if (!only || only === 'partitions') await partitionsBench();
if (!only || only === 'writers') await writersBench();
if (!only || only === 'retained') {
  const retained = Number(process.env.BENCH_RETAINED ?? 10_000);
  console.log(`commit of a 10-row append with ${retained} retained snapshots vs 10 (bench/retained.ts)`);
  await retainedBench(root, retained, Number(process.env.BENCH_RETAINED_COMMITS ?? 30));
}
if (!only || only === 'open') {
  const versions = Number(process.env.BENCH_VERSIONS ?? 10_000);
  console.log(`plan a read of a table with ${versions} versions vs 10, median of 5 (bench/open.ts)`);
  await openBench(root, versions);
}
if (!only || only === 'read') {
  console.log(`read ${rows} rows, median of 3 (ratio per run in brackets)`);
  await readBench(root, rows);
}
if (only === 'scale') {
  // Run alone only: it streams BENCH_GB (default 10) GB through the CLI.
  const { scaleBench } = await import('./scale.ts');
  const gb = Number(process.env.BENCH_GB ?? 10);
  const extra = process.env.BENCH_SCALE_ARGS ? process.env.BENCH_SCALE_ARGS.split(' ') : [];
  console.log(`scale: ${gb} GB of NDJSON events generated on the fly into \`twinlake write --input -\`${extra.length ? ` (${extra.join(' ')})` : ''}`);
  const r = await scaleBench(join(root, 'scale'), Math.round(gb * 1e9), extra);
  const rowsOk = Object.values(r.counts).every((n) => n === r.rows);
  console.log(`  ${(r.bytes / 1e9).toFixed(2)} GB, ${r.rows} rows in ${(r.ms / 1000).toFixed(1)} s = ${Math.round(r.rows / (r.ms / 1000))} rows/s (${(r.bytes / 1e6 / (r.ms / 1000)).toFixed(0)} MB/s)`);
  console.log(`  peak RSS ${r.peakRssMb} MB   goal < 1024 MB ${r.peakRssMb < 1024 ? 'MET' : 'NOT MET'};   peak disk ${r.peakDiskMb} MB`);
  console.log(`  rows: iceberg ${r.counts.iceberg}, delta ${r.counts.delta}, duckdb over iceberg files ${r.counts.duckdbIceberg}, over delta files ${r.counts.duckdbDelta}: ${rowsOk ? 'all equal' : 'NOT EQUAL'}`);
}
if (only === 'cloud') {
  // Run alone only: it starts a RADOS Gateway and writes BENCH_CLOUD_GB (default 1) GB to it.
  const { cloudWriteBench } = await import('./cloud.ts');
  const gb = Number(process.env.BENCH_CLOUD_GB ?? 1);
  console.log(`cloud: ${gb} GB of NDJSON events appended to an s3:// table on RADOS Gateway (engine memory limit 512MB)`);
  const r = await cloudWriteBench(join(root, 'cloud'), Math.round(gb * 1e9));
  const rowsOk = r.counts.iceberg === r.rows && r.counts.delta === r.rows;
  console.log(`  ${(r.bytes / 1e9).toFixed(2)} GB, ${r.rows} rows into ${r.files} files (${r.multipartFiles} sent multipart) in ${(r.ms / 1000).toFixed(1)} s = ${Math.round(r.rows / (r.ms / 1000))} rows/s`);
  console.log(`  peak RSS ${r.peakRssMb} MB;   rows read back: iceberg ${r.counts.iceberg}, delta ${r.counts.delta}: ${rowsOk ? 'all equal' : 'NOT EQUAL'}`);
}
if (!only || only === 'add-files') await addFilesBench(root, Number(process.env.BENCH_FILES ?? 100_000));
// Run alone only: a load test of `twinlake serve` (bench/serve.ts).
if (only === 'serve') await serveBench(root);
// Run alone only: issue 14's load (bench/load.ts).
if (only === 'load') await (await import('./load.ts')).loadBench(root);
