import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Lakehouse } from '../src/index.ts';
import { localPath } from '../src/core/uri.ts';
import { scanRelationSql } from '../src/engine/read-scan.ts';
import { liveFiles } from '../src/table/read/iceberg-scan.ts';
import { ordersFile } from './data.ts';

/** What a reader gave back: rows, distinct order IDs, the sum of order IDs, items in all lists. */
export interface Totals {
  rows: number;
  distinctIds: number;
  idSum: bigint;
  items: number;
}

export interface ManyPartitionsResult {
  expected: Totals;
  /** Our Iceberg and Delta readers, and DuckDB's read_parquet over each format's live files. */
  read: { iceberg: Totals; delta: Totals; duckdbIceberg: Totals; duckdbDelta: Totals };
  files: number;
  partitions: number;
  /** Files whose rows fall in more than one hour, or in another hour than their partition value. */
  misplacedFiles: number;
  writeMs: number;
  peakRssMb: number;
}

const TOTALS = `count(*)::BIGINT AS rows, count(DISTINCT order_id)::BIGINT AS ids, sum(order_id)::HUGEINT AS id_sum, sum(len(items))::BIGINT AS items`;

function totalsOf(row: Record<string, unknown>): Totals {
  return { rows: Number(row.rows), distinctIds: Number(row.ids), idSum: BigInt(String(row.id_sum)), items: Number(row.items) };
}

/**
 * Writes `rows` orders spread over `hours` hour partitions (`hour(order_ts)`) in one append under
 * the given engine memory limit, then reads every row back through both formats and through DuckDB
 * over the live files, and checks that each file holds exactly its own partition. Peak RSS is
 * sampled for the whole process during the write.
 */
export async function manyPartitions(opts: { dir: string; rows: number; hours: number; memoryLimit: string; threads: number }): Promise<ManyPartitionsResult> {
  const input = await ordersFile(join(opts.dir, `orders-${opts.rows}-${opts.hours}.ndjson`), opts.rows, opts.hours);
  const lake = await Lakehouse.open({ warehouse: join(opts.dir, 'warehouse'), engine: { memoryLimit: opts.memoryLimit, threads: opts.threads, tempDir: join(opts.dir, 'spill') } });
  try {
    const t = lake.table('bench.orders');
    let peak = process.memoryUsage().rss;
    const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 25);
    const t0 = performance.now();
    let result;
    try {
      result = await t.append({ path: input }, { partition: 'hour(order_ts)' });
    } finally {
      clearInterval(sample);
    }
    const writeMs = performance.now() - t0;
    peak = Math.max(peak, process.memoryUsage().rss);

    const session = await lake.session();
    const ours = async (format: 'iceberg' | 'delta') => {
      const plan = await t.plan({ format });
      const [row] = await session.all(`SELECT ${TOTALS} FROM (${scanRelationSql(plan.task)})`);
      return { totals: totalsOf(row!), paths: plan.task.files.map((f) => localPath(f.path)) };
    };
    const iceberg = await ours('iceberg');
    const delta = await ours('delta');

    // An engine that shares no code with the writer, given exactly the live files.
    const db = await DuckDBInstance.create(':memory:', { memory_limit: opts.memoryLimit, threads: String(opts.threads) });
    const c = await db.connect();
    const list = (paths: string[]) => `[${paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ')}]`;
    const duck = async (paths: string[]) => totalsOf((await c.runAndReadAll(`SELECT ${TOTALS} FROM read_parquet(${list(paths)})`)).getRowObjectsJS()[0]!);
    const duckdbIceberg = await duck(iceberg.paths);
    const duckdbDelta = await duck(delta.paths);
    const hours = (await c.runAndReadAll(
      `SELECT filename, min(epoch_us(order_ts) // 3600000000)::BIGINT AS lo, max(epoch_us(order_ts) // 3600000000)::BIGINT AS hi FROM read_parquet(${list(iceberg.paths)}, filename = true) GROUP BY filename`,
    )).getRowObjectsJS();
    c.closeSync();
    db.closeSync();

    const m = await t.metadata();
    const snapshot = m.snapshots!.find((s) => s['snapshot-id'] === m['current-snapshot-id'])!;
    const partitionOf = new Map((await liveFiles(lake.io, m, snapshot)).data.map((f) => [localPath(f['file-path']), Number(f.partition.order_ts_hour)]));
    const misplacedFiles = hours.filter((h) => h.lo !== h.hi || Number(h.lo) !== partitionOf.get(String(h.filename))).length;

    let idSum = 0n;
    let items = 0;
    for (let i = 0; i < opts.rows; i++) {
      idSum += BigInt(i);
      items += 1 + (i % 3);
    }
    return {
      expected: { rows: opts.rows, distinctIds: opts.rows, idSum, items },
      read: { iceberg: iceberg.totals, delta: delta.totals, duckdbIceberg, duckdbDelta },
      files: result.files,
      partitions: new Set(partitionOf.values()).size,
      misplacedFiles,
      writeMs,
      peakRssMb: Math.round(peak / 2 ** 20),
    };
  } finally {
    await lake.close();
  }
}
