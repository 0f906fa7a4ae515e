import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Lakehouse } from '../src/index.ts';

/**
 * Writer processes on one table at once, with the default commit retry settings: `appenders`
 * processes appending `batches` batches of `rows` rows each, and `mergers` processes merging
 * `rounds` rounds of 20 upserts into keys of their own. Afterwards, what both formats hold.
 */
export interface ManyWritersOptions {
  warehouse: string;
  appenders: number;
  batches: number;
  rows: number;
  mergers?: number;
  rounds?: number;
}

export interface ManyWritersResult {
  /** Exit code and stderr of each writer process. */
  writers: { name: string; code: number; stderr: string }[];
  /** Commits the writers made (the seeding commit of a mixed run not counted). */
  commits: number;
  ms: number;
  commitsPerSecond: number;
  /** Snapshots in the table's history, oldest first, with the Delta version each names. */
  deltaVersionsOfSnapshots: (number | undefined)[];
  /** The Delta log's commit files, by version. */
  deltaLog: number[];
  /** Per format: appended keys (`writer-batch-i`) and merged ids with the merger that owns each row. */
  read: Record<'iceberg' | 'delta', { rows: number; appendedKeys: string[]; mergedIds: number[]; mergedOwners: string[] }>;
  /** Appended keys the writers wrote, sorted. */
  expectedKeys: string[];
  /** Ids of the merge keys (seeded, then upserted), sorted. */
  expectedIds: number[];
}

const root = resolve(import.meta.dirname, '..');
const TABLE = 'many.writers';

function worker(script: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test/workers', script), ...args], { cwd: root });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => done({ code: code ?? -1, stderr }));
  });
}

export async function manyWriters(o: ManyWritersOptions): Promise<ManyWritersResult> {
  const mergers = o.mergers ?? 0;
  const rounds = o.rounds ?? 0;
  const mergerNames = Array.from({ length: mergers }, (_, i) => String.fromCharCode(65 + i));
  const appenderNames = Array.from({ length: o.appenders }, (_, i) => `W${i}`);
  const expectedIds = mergerNames.flatMap((_, m) => Array.from({ length: 40 }, (_, i) => m * 1000 + i));
  if (mergers > 0) {
    // The merge keys exist before the merges start, and the table has every column both kinds
    // of writer write, so the run measures commits rather than schema changes.
    const lake = await Lakehouse.open({ warehouse: o.warehouse });
    await lake.table(TABLE).append(expectedIds.map((id) => ({ writer: 'seed', batch: -1, i: -1, key: `seed-${id}`, id, owner: 'seed', round: -1 })));
    await lake.close();
  }
  const t0 = performance.now();
  const ran = await Promise.all([
    ...appenderNames.map((w) => worker('append-worker.ts', [o.warehouse, TABLE, w, String(o.batches), String(o.rows)])),
    ...mergerNames.map((w) => worker('merge-worker.ts', [o.warehouse, TABLE, w, String(rounds)])),
  ]);
  const ms = performance.now() - t0;
  const commits = o.appenders * o.batches + mergers * rounds;

  const lake = await Lakehouse.open({ warehouse: o.warehouse });
  try {
    const t = lake.table(TABLE);
    const history = (await t.history()).reverse();
    const read = {} as ManyWritersResult['read'];
    for (const format of ['iceberg', 'delta'] as const) {
      const rows = await t.read({ format });
      const appended = rows.filter((r) => r.id == null);
      const merged = rows.filter((r) => r.id != null).sort((a, b) => Number(a.id) - Number(b.id));
      read[format] = {
        rows: rows.length,
        appendedKeys: appended.map((r) => String(r.key)).sort(),
        mergedIds: merged.map((r) => Number(r.id)),
        mergedOwners: merged.map((r) => String(r.owner)),
      };
    }
    const deltaLog = readdirSync(join(o.warehouse, 'many', 'writers', '_delta_log'))
      .filter((f) => /^\d{20}\.json$/.test(f))
      .map((f) => Number(f.slice(0, 20)));
    const expectedKeys = appenderNames.flatMap((w) => Array.from({ length: o.batches * o.rows }, (_, n) => `${w}-${Math.floor(n / o.rows)}-${n % o.rows}`)).sort();
    return {
      writers: [...appenderNames, ...mergerNames].map((name, i) => ({ name, ...ran[i]! })),
      commits,
      ms,
      commitsPerSecond: commits / (ms / 1000),
      deltaVersionsOfSnapshots: history.map((h) => h.deltaVersion),
      deltaLog,
      read,
      expectedKeys,
      expectedIds,
    };
  } finally {
    await lake.close();
  }
}
