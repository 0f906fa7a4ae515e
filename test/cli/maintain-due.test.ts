import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { RUN_LOG_FOLDER } from '../../src/maintenance/run-log.ts';
import { cli, listFiles, tempDir } from '../helpers.ts';

/**
 * `twinlake maintain` from the real binary: --all --due for cron users, the config file's
 * snapshotRetention and compactionTarget below the table's properties, schedules and
 * delta.logRetentionDuration through `alter`.
 */

const DAY = 86400e3;
let tmp: ReturnType<typeof tempDir>;
let wh: string;

/** Tables written by a lakehouse whose clock is `ageDays` back, so their snapshots are old. */
async function write(name: string, batches: number, opts: { formats?: ('iceberg' | 'delta')[]; ageDays?: number } = {}): Promise<void> {
  const clock = { nowMs: () => Date.now() - (opts.ageDays ?? 0) * DAY };
  const lake = await Lakehouse.open({ warehouse: wh, clock, onWarning: () => {} });
  try {
    for (let i = 0; i < batches; i++) await lake.table(name).append([{ id: i }], opts.formats ? { formats: opts.formats } : {});
  } finally {
    await lake.close();
  }
}

const logOf = (ns: string, name: string) => {
  try {
    return readdirSync(join(wh, ns, name, RUN_LOG_FOLDER)).sort();
  } catch {
    return [];
  }
};

beforeAll(async () => {
  tmp = tempDir();
  wh = join(tmp.path, 'wh');
  await write('sales.orders', 3);
  await write('sales.events', 3);
  await write('sales.quiet', 2);
});
afterAll(() => tmp.cleanup());

describe('twinlake maintain --all --due', () => {
  test('runs what each schedule says is due, says what would run, and exits non-zero naming a failed table', () => {
    const alter = (table: string, prop: string) => cli(['alter', table, '--property', prop, '--warehouse', wh]);
    expect(alter('sales.orders', 'maintenance.schedule.compaction=every 6h').code).toBe(0);
    expect(alter('sales.events', 'maintenance.schedule=0 3 * * *').code).toBe(0);
    // A bad schedule is refused by alter, naming the property, the value and what is expected.
    const bad = alter('sales.quiet', 'maintenance.schedule=every 6 hrs');
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain('maintenance: table property maintenance.schedule expects an interval such as "every 6h" or "1d", a 5-field cron expression in UTC such as "0 3 * * *", or "off", found "every 6 hrs": unknown unit "hrs" (use m, h, d or w)');

    // (Tables' folders: a read-only open of the SQLite catalog may add its -wal and -shm files.)
    const files = listFiles(join(wh, 'sales'));
    const dry = cli(['maintain', '--all', '--due', '--dry-run', '--warehouse', wh]);
    expect([dry.code, dry.stderr]).toEqual([0, '']);
    expect(dry.stdout.split('\n').filter(Boolean)).toEqual([
      'sales.events: would run full_maintenance (schedule from table property)',
      'sales.orders: would run compaction (schedule from table property)',
      'sales.quiet: no schedule',
    ]);
    expect(listFiles(join(wh, 'sales'))).toEqual(files);

    const run = cli(['maintain', '--all', '--due', '--warehouse', wh]);
    expect([run.code, run.stderr]).toEqual([0, '']);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines[0]).toBe('sales.events: ran full_maintenance (schedule from table property)');
    // (Expiry also drops Delta version 0, the table's creation, which mirrors no snapshot.)
    expect(lines[1]).toMatch(/^ {2}full_maintenance: completed in \d+ ms; rewrote 3 file\(s\), .* → 1 file\(s\), removed 1 file\(s\), freed \d+ B, committed snapshot -?\d+, delta version 4$/);
    expect(lines[2]).toBe('sales.orders: ran compaction (schedule from table property)');
    expect(lines[3]).toMatch(/^ {2}compaction: completed in \d+ ms; rewrote 3 file\(s\), .* → 1 file\(s\), committed snapshot -?\d+, delta version 4$/);
    expect(lines[4]).toBe('sales.quiet: no schedule');
    expect(logOf('sales', 'orders')).toEqual([expect.stringMatching(/^\d{13}-compaction-[0-9a-f]{8}\.json$/)]);
    const entry = JSON.parse(readFileSync(join(wh, 'sales', 'orders', RUN_LOG_FOLDER, logOf('sales', 'orders')[0]!), 'utf8'));
    expect(entry).toMatchObject({ table: 'sales.orders', operation: 'compaction', trigger: 'schedule', outcome: 'completed', rewritten: { files: 3 } });

    // Nothing is due again until the schedules say.
    const again = cli(['maintain', '--all', '--due', '--json', '--warehouse', wh]);
    expect(again.code).toBe(0);
    const report = JSON.parse(again.stdout) as { table: string; due: string[]; runs: unknown[]; next: { operation: string; dueAt: string }[] }[];
    expect(report.map((t) => [t.table, t.due ?? [], t.runs.length])).toEqual([['sales.events', [], 0], ['sales.orders', [], 0], ['sales.quiet', [], 0]]);
    const orders = report.find((t) => t.table === 'sales.orders')!;
    expect(Date.parse(orders.next[0]!.dueAt) - Date.parse(entry.startedAt)).toBe(6 * 3600e3);

    // A due run that fails: the others still run, and the exit code and stderr name the table.
    const only = cli(['write', 'sales.iceberg_only', '--input', '-', '--input-format', 'ndjson', '--formats', 'iceberg', '--property', 'maintenance.schedule.delta_checkpoint=1d', '--warehouse', wh], { input: '{"id":1}\n' });
    expect(only.code, only.stderr).toBe(0);
    const failed = cli(['maintain', '--all', '--due', '--warehouse', wh]);
    // The failed run's own exit code: 3, a table setting that does not fit (invalid input).
    expect(failed.code).toBe(3);
    expect(failed.stdout).toContain('sales.iceberg_only: ran delta_checkpoint (schedule from table property)\n  delta_checkpoint: failed: maintenance: delta_checkpoint needs a Delta table');
    expect(failed.stderr).toBe('maintain: failed on sales.iceberg_only\n');
  });

  test('usage: --all goes with --due and without a table', () => {
    for (const args of [['--due'], ['sales.orders', '--all', '--due'], ['--all', '--due', '--retention', '3d']]) {
      const r = cli(['maintain', ...args, '--warehouse', wh]);
      expect(r.code, args.join(' ')).toBe(2);
    }
    expect(cli(['maintain', '--all', '--warehouse', wh]).stderr).toContain('maintain: --all goes with --due, without a table or --operation');
  });
});

describe('the config file\'s snapshotRetention and compactionTarget', () => {
  test('flag > table property > config > the seed\'s default, for twinlake maintain', async () => {
    await write('cfg.orders', 2, { ageDays: 5 });
    const cfg = join(tmp.path, 'twinlake.yaml');
    writeFileSync(cfg, `warehouse: ${wh}\ntables:\n  cfg.orders:\n    snapshotRetention: 3d\n    compactionTarget: 5MB\n`);
    const maintain = (...args: string[]) => {
      const r = cli(['maintain', 'cfg.orders', ...args, '--dry-run', '--json', '--config', cfg]);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout);
    };
    expect(maintain('--operation', 'snapshot_expiry')).toMatchObject({ retentionMs: 3 * DAY, retentionSource: 'config' });
    expect(maintain('--operation', 'compaction')).toMatchObject({ targetFileSize: 5e6 });
    expect(maintain('--operation', 'snapshot_expiry', '--retention', '1d')).toMatchObject({ retentionMs: DAY, retentionSource: 'option' });
    expect(maintain('--operation', 'compaction', '--target-file-size', '9MB')).toMatchObject({ targetFileSize: 9e6 });
    // Without the config file: the seed's defaults.
    const plain = JSON.parse(cli(['maintain', 'cfg.orders', '--operation', 'snapshot_expiry', '--dry-run', '--json', '--warehouse', wh]).stdout);
    expect(plain).toMatchObject({ retentionMs: 7 * DAY, retentionSource: 'default' });
    // The table's own property wins over the config.
    expect(cli(['alter', 'cfg.orders', '--property', `history.expire.max-snapshot-age-ms=${2 * DAY}`, '--property', 'write.target-file-size-bytes=7000000', '--config', cfg]).code).toBe(0);
    expect(maintain('--operation', 'snapshot_expiry')).toMatchObject({ retentionMs: 2 * DAY, retentionSource: 'history.expire.max-snapshot-age-ms' });
    expect(maintain('--operation', 'compaction')).toMatchObject({ targetFileSize: 7e6 });
  });
});

describe('delta.logRetentionDuration', () => {
  test('alter sets it (a Delta interval, mirrored into the Delta log) and expiry honours it', async () => {
    await write('logs.events', 3, { ageDays: 20 });
    await write('logs.events', 1);
    const wrong = cli(['alter', 'logs.events', '--property', 'delta.logRetentionDuration=30 dayz', '--warehouse', wh]);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toContain('table property delta.logRetentionDuration expects a Delta interval such as "interval 30 days" (units: millisecond, second, minute, hour, day, week), found "30 dayz"');
    const set = cli(['alter', 'logs.events', '--property', 'delta.logRetentionDuration=interval 25 days', '--warehouse', wh]);
    expect(set.code, set.stderr).toBe(0);
    const logDir = join(wh, 'logs', 'events', '_delta_log');
    const newest = readdirSync(logDir).filter((n) => /^\d{20}\.json$/.test(n)).sort().at(-1)!;
    const metaData = readFileSync(join(logDir, newest), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((a) => a.metaData)?.metaData;
    expect(metaData.configuration['delta.logRetentionDuration']).toBe('interval 25 days');
    const r = cli(['maintain', 'logs.events', '--operation', 'snapshot_expiry', '--dry-run', '--json', '--warehouse', wh]);
    expect(r.code, r.stderr).toBe(0);
    // Longer than the seed's 7 days: it keeps the 20-day-old snapshots for both formats.
    expect(JSON.parse(r.stdout)).toMatchObject({ retentionMs: 25 * DAY, retentionSource: 'delta.logRetentionDuration', expiredSnapshots: [] });
  });
});
