import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { FULL_MAINTENANCE_ORDER, runMaintenance, type FullMaintenanceResult } from '../../src/maintenance/maintain.ts';
import { listRuns, runAndLog, RUN_LOG_FOLDER } from '../../src/maintenance/run-log.ts';
import { duePlan, runDue } from '../../src/maintenance/schedule.ts';
import { SCHEDULED_OPERATIONS } from '../../src/format/dual/maintenance-schedule.ts';
import type { ExpireResult } from '../../src/maintenance/expire.ts';
import { errorOf, tempDir } from '../helpers.ts';

/**
 * The run log (one create-only JSON object per run below the table) and due-ness from it, with a
 * controlled clock; the config's retention and target below the table's own properties.
 */

const HOUR = 3600e3;
const DAY = 24 * HOUR;

let tmp: ReturnType<typeof tempDir>;
let lake: Lakehouse;
const clock = { t: Date.parse('2026-03-01T00:00:00Z'), nowMs: () => clock.t };

beforeAll(async () => {
  tmp = tempDir();
  lake = await Lakehouse.open({ warehouse: tmp.path, clock, onWarning: () => {} });
});
afterAll(async () => {
  await lake.close();
  tmp.cleanup();
});

const logFiles = (ns: string, name: string) => readdirSync(join(tmp.path, ns, name, RUN_LOG_FOLDER)).sort();

test('the scheduled operations are full_maintenance and its steps, in its order', () => {
  expect(SCHEDULED_OPERATIONS).toEqual(['full_maintenance', ...FULL_MAINTENANCE_ORDER]);
});

describe('run log', () => {
  test('a completed run: what it rewrote and committed; a failed run: its error; a dry run: nothing', async () => {
    const t = lake.table('log.orders');
    for (let i = 0; i < 4; i++) {
      clock.t += HOUR;
      await t.append([{ id: i }]);
    }
    const before = (await t.describe()).currentSnapshotId;
    clock.t += HOUR;
    const { result, run } = await runAndLog(t, 'compaction');
    expect(result.operation).toBe('compaction');
    expect(run).toMatchObject({ table: 'log.orders', operation: 'compaction', trigger: 'manual', outcome: 'completed', startedAt: new Date(clock.t).toISOString(), rewritten: { files: 4 }, added: { files: 1 }, bytesFreed: 0 });
    const after = await t.describe();
    expect(after.currentSnapshotId).not.toBe(before);
    expect(run!.snapshotId).toBe(String(after.currentSnapshotId));
    expect(run!.deltaVersion).toBe(after.deltaVersion);
    // The history shows the commit as maintenance: the snapshot summary names compaction, Delta says OPTIMIZE.
    const [head] = await t.history();
    expect(head).toMatchObject({ operation: 'replace', change: 'compaction' });
    const commit = readFileSync(join(tmp.path, 'log', 'orders', '_delta_log', `${String(after.deltaVersion).padStart(20, '0')}.json`), 'utf8');
    expect(JSON.parse(commit.split('\n')[0]!).commitInfo).toMatchObject({ operation: 'OPTIMIZE', icebergSnapshotId: expect.anything() });

    // Old snapshots go: the entry names them and the Delta log files removed.
    clock.t += 10 * DAY;
    const expiry = await runAndLog(t, 'snapshot_expiry', { retention: DAY });
    expect((expiry.result as ExpireResult).expiredSnapshots.length).toBe(4);
    expect(expiry.run).toMatchObject({ operation: 'snapshot_expiry', outcome: 'completed', expiredSnapshots: (expiry.result as ExpireResult).expiredSnapshots.map(String) });
    expect(expiry.run!.snapshotId).toBeUndefined();
    expect(expiry.run!.removed.files).toBe((expiry.result as ExpireResult).delta!.removedLogFiles.length);
    expect(expiry.run!.bytesFreed).toBe((expiry.result as ExpireResult).bytesFreed);

    await runAndLog(t, 'orphan_cleanup', { dryRun: true });
    const files = logFiles('log', 'orders');
    expect(files).toHaveLength(2);
    expect(files[0]).toMatch(/^\d{13}-compaction-[0-9a-f]{8}\.json$/);
    expect(JSON.parse(readFileSync(join(tmp.path, 'log', 'orders', RUN_LOG_FOLDER, files[0]!), 'utf8'))).toEqual(run);

    const iceberg = lake.table('log.iceberg_only');
    await iceberg.append([{ id: 1 }], { formats: ['iceberg'] });
    const failure = await errorOf(runAndLog(iceberg, 'delta_checkpoint'));
    expect(failure.message).toContain('delta_checkpoint needs a Delta table');
    const [failed] = await listRuns(iceberg);
    expect(failed).toMatchObject({ operation: 'delta_checkpoint', outcome: 'failed', error: { kind: 'invalid-input', message: failure.message } });

    // Newest first.
    expect((await listRuns(t)).map((r) => r.operation)).toEqual(['snapshot_expiry', 'compaction']);
    expect((await listRuns(t, { limit: 1 })).map((r) => r.operation)).toEqual(['snapshot_expiry']);
  });
});

describe('due-ness from the run log', () => {
  test('an operation runs when due, and not again until its schedule says', async () => {
    const t = lake.table('due.events');
    await t.append([{ id: 1 }]);
    await t.append([{ id: 2 }]);
    await t.alter({ set: { 'maintenance.schedule.compaction': 'every 6h', 'maintenance.schedule.snapshot_expiry': '0 3 * * *' } });
    clock.t = Date.parse('2026-04-01T10:00:00Z');
    const first = await duePlan(t, {}, clock.nowMs());
    expect(first).toMatchObject({ source: 'table property', due: ['compaction', 'snapshot_expiry'] });
    const runs = await runDue(t, first, {});
    expect(runs.map((r) => [r.operation, r.outcome, r.run?.trigger])).toEqual([['compaction', 'completed', 'schedule'], ['snapshot_expiry', 'completed', 'schedule']]);

    clock.t = Date.parse('2026-04-01T15:59:00Z');
    expect((await duePlan(t, {}, clock.nowMs())).due).toEqual([]);
    clock.t = Date.parse('2026-04-01T16:00:00Z');
    const later = await duePlan(t, {}, clock.nowMs());
    expect(later.due).toEqual(['compaction']);
    expect(later.next).toEqual([
      { operation: 'compaction', schedule: 'every 6h', lastRun: '2026-04-01T10:00:00.000Z', dueAt: '2026-04-01T16:00:00.000Z' },
      { operation: 'snapshot_expiry', schedule: '0 3 * * *', lastRun: '2026-04-01T10:00:00.000Z', dueAt: '2026-04-02T03:00:00.000Z' },
    ]);
    clock.t = Date.parse('2026-04-02T03:00:00Z');
    expect((await duePlan(t, {}, clock.nowMs())).due).toEqual(['compaction', 'snapshot_expiry']);
    // A manual full_maintenance counts as a run of each of its steps.
    await runAndLog(t, 'full_maintenance');
    expect((await duePlan(t, {}, clock.nowMs())).due).toEqual([]);
  });

  test('the table property wins over the config tables entry, which wins over the warehouse-wide schedule', async () => {
    const t = lake.table('due.sources');
    await t.append([{ id: 1 }]);
    const now = clock.nowMs();
    expect(await duePlan(t, {}, now)).toMatchObject({ source: 'none', due: [] });
    expect(await duePlan(t, { warehouseSchedule: '1d' }, now)).toMatchObject({ source: 'config', due: ['full_maintenance'] });
    expect(await duePlan(t, { warehouseSchedule: '1d', schedule: { orphan_cleanup: '1d' } }, now)).toMatchObject({ source: 'config tables entry', due: ['orphan_cleanup'] });
    await t.alter({ set: { 'maintenance.schedule': 'off' } });
    expect(await duePlan(t, { warehouseSchedule: '1d', schedule: { orphan_cleanup: '1d' } }, now)).toMatchObject({ source: 'table property', due: [] });
  });

  test('alter and table creation refuse a bad schedule, naming the property and the value', async () => {
    const t = lake.table('due.bad');
    await t.append([{ id: 1 }]);
    const bad = await errorOf(t.alter({ set: { 'maintenance.schedule.compaction': '0 25 * * *' } }));
    expect(bad.kind).toBe('invalid-input');
    expect(bad.message).toBe('maintenance: table property maintenance.schedule.compaction expects an interval such as "every 6h" or "1d", a 5-field cron expression in UTC such as "0 3 * * *", or "off", found "0 25 * * *": hour field "25": 25 is outside 0-23');
    const unknown = await errorOf(t.alter({ set: { 'maintenance.schedule.vacuum': '1d' } }));
    expect(unknown.message).toContain('maintenance: table property maintenance.schedule.vacuum names no operation');
    expect((await t.describe()).properties['maintenance.schedule.compaction']).toBeUndefined();
    const created = await errorOf(lake.table('due.bad_new').append([{ id: 1 }], { properties: { 'maintenance.schedule': 'whenever' } }));
    expect(created.message).toContain('table property maintenance.schedule expects an interval');
    expect(await lake.table('due.bad_new').exists()).toBe(false);
  });
});

test('the config\'s retention and target apply only where the option and the table property do not', async () => {
  const t = lake.table('cfg.orders');
  clock.t = Date.parse('2026-05-01T00:00:00Z');
  await t.append([{ id: 1 }]);
  const configured = { retention: 3 * DAY, targetFileSize: 5_000_000 };
  const expiry = (await runMaintenance(t, 'snapshot_expiry', { dryRun: true, configured })) as ExpireResult;
  expect([expiry.retentionMs, expiry.retentionSource]).toEqual([3 * DAY, 'config']);
  const compaction = await runMaintenance(t, 'compaction', { dryRun: true, configured });
  expect(compaction).toMatchObject({ targetFileSize: 5_000_000 });
  expect(await runMaintenance(t, 'snapshot_expiry', { dryRun: true })).toMatchObject({ retentionMs: 7 * DAY, retentionSource: 'default' });
  // full_maintenance hands them to its steps.
  const full = (await runMaintenance(t, 'full_maintenance', { dryRun: true, configured })) as FullMaintenanceResult;
  const step = (op: string) => full.steps.find((s) => s.operation === op);
  expect(step('snapshot_expiry')).toMatchObject({ status: 'completed', result: { retentionMs: 3 * DAY, retentionSource: 'config' } });
  expect(step('compaction')).toMatchObject({ status: 'completed', result: { targetFileSize: 5_000_000 } });

  await t.alter({ set: { 'history.expire.max-snapshot-age-ms': String(2 * DAY), 'write.target-file-size-bytes': '7000000' } });
  expect(await runMaintenance(t, 'snapshot_expiry', { dryRun: true, configured })).toMatchObject({ retentionMs: 2 * DAY, retentionSource: 'history.expire.max-snapshot-age-ms' });
  expect(await runMaintenance(t, 'compaction', { dryRun: true, configured })).toMatchObject({ targetFileSize: 7_000_000 });
  expect(await runMaintenance(t, 'snapshot_expiry', { dryRun: true, configured, retention: DAY })).toMatchObject({ retentionMs: DAY, retentionSource: 'option' });
  expect(await runMaintenance(t, 'compaction', { dryRun: true, configured, targetFileSize: 9_000_000 })).toMatchObject({ targetFileSize: 9_000_000 });
});
