import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Lakehouse } from '../src/index.ts';
import { localPath } from '../src/core/uri.ts';
import { scanRelationSql } from '../src/engine/read-scan.ts';

export interface ScaleResult {
  bytes: number;
  rows: number;
  ms: number;
  /** The CLI process's peak resident memory (VmHWM), its children's added. */
  peakRssMb: number;
  /** The most disk the write took at once (staged input, spill and output), from the free space. */
  peakDiskMb: number;
  /** Rows by our reader and by DuckDB over the live files, per format. */
  counts: { iceberg: number; delta: number; duckdbIceberg: number; duckdbDelta: number };
}

/** VmHWM of `pid` and every process below it, in bytes (0 for one that has exited). */
function peakOf(pid: number): number {
  let total = 0;
  try {
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    total += hwm ? Number(hwm[1]) * 1024 : 0;
    for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(/\s+/).filter(Boolean)) total += peakOf(Number(task));
  } catch {
    // The process ended between the listing and the read.
  }
  return total;
}

/**
 * Streams `bytes` of NDJSON events from a generator process into `twinlake write --input -` (no
 * input file exists), samples the CLI's peak RSS from /proc while it runs, then counts the table's
 * rows through both formats and through DuckDB over each format's live files.
 */
export async function scaleBench(dir: string, bytes: number, cliArgs: string[] = []): Promise<ScaleResult> {
  const warehouse = join(dir, 'warehouse');
  rmSync(warehouse, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const free = () => {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  };
  const freeBefore = free();
  let minFree = freeBefore;
  const gen = spawn(process.execPath, ['--import', 'tsx', 'bench/scale-gen.ts', String(bytes)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const cli = spawn(process.execPath, ['bin/twinlake.mjs', '--warehouse', warehouse, ...cliArgs, 'write', 'bench.scale', '--input', '-', '--input-format', 'ndjson'], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  gen.stdout.pipe(cli.stdin);
  let genErr = '';
  let cliErr = '';
  gen.stderr.on('data', (d) => (genErr += d));
  cli.stderr.on('data', (d) => (cliErr += d));
  cli.stdout.resume();
  let peak = 0;
  const t0 = performance.now();
  const sample = setInterval(() => {
    peak = Math.max(peak, peakOf(cli.pid!));
    minFree = Math.min(minFree, free());
  }, 100);
  const exit = (p: ReturnType<typeof spawn>) => new Promise<number>((r) => p.on('close', (code) => r(code ?? 1)));
  const [genCode, cliCode] = await Promise.all([exit(gen), exit(cli)]);
  clearInterval(sample);
  const ms = performance.now() - t0;
  if (genCode !== 0 || cliCode !== 0) throw new Error(`scale: generator exited ${genCode}, twinlake write exited ${cliCode}: ${genErr.trim()} ${cliErr.trim().split('\n').slice(-3).join(' ')}`);
  const generated = JSON.parse(genErr.trim().split('\n').at(-1)!) as { rows: number; bytes: number };

  const lake = await Lakehouse.open({ warehouse, engine: { memoryLimit: '1GB', threads: 2 } });
  try {
    const t = lake.table('bench.scale');
    const session = await lake.session();
    const db = await DuckDBInstance.create(':memory:', { memory_limit: '1GB', threads: '2' });
    const c = await db.connect();
    const counts = { iceberg: 0, delta: 0, duckdbIceberg: 0, duckdbDelta: 0 };
    for (const format of ['iceberg', 'delta'] as const) {
      const plan = await t.plan({ format });
      const [row] = await session.all(`SELECT count(*)::BIGINT AS n FROM (${scanRelationSql(plan.task)})`);
      counts[format] = Number(row!.n);
      // An engine that shares no code with the writer, given exactly the live files.
      const list = `[${plan.task.files.map((f) => `'${localPath(f.path).replace(/'/g, "''")}'`).join(', ')}]`;
      const [duck] = (await c.runAndReadAll(`SELECT count(*)::BIGINT AS n FROM read_parquet(${list})`)).getRowObjectsJS();
      counts[format === 'iceberg' ? 'duckdbIceberg' : 'duckdbDelta'] = Number(duck!.n);
    }
    c.closeSync();
    db.closeSync();
    return { bytes: generated.bytes, rows: generated.rows, ms, peakRssMb: Math.round(peak / 2 ** 20), peakDiskMb: Math.round((freeBefore - minFree) / 2 ** 20), counts };
  } finally {
    await lake.close();
    rmSync(warehouse, { recursive: true, force: true });
  }
}
