import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Lakehouse, type Table } from '../../src/index.ts';
import { checkpointPath, commitPath } from '../../src/format/delta/actions.ts';
import { setRef, updateProperties } from '../../src/table/commit/table-actions.ts';
import { committedOrThrow, Transaction } from '../../src/table/commit/transaction.ts';
import { expireSnapshots, type ExpireResult } from '../../src/maintenance/expire.ts';
import { errorOf, listFiles, tempDir } from '../helpers.ts';
import { duckdbIds, expectBothEqual, ids } from '../both-formats.ts';
import { deltaFailingIO } from '../faults.ts';

/**
 * Snapshot expiry with Delta log retention following it, on a table with a commit a day and a
 * clock the test moves: what is kept and why, time travel to everything kept (our readers and
 * DuckDB over the files), the Delta log cut only behind a checkpoint, and a dry run.
 */

const DAY = 86400e3;
const T0 = Date.UTC(2026, 0, 1);

function lakeWithClock() {
  const tmp = tempDir();
  const clock = { t: T0, nowMs: () => clock.t };
  const fx = { warehouse: tmp.path, clock } as { lake: Lakehouse; warehouse: string; clock: typeof clock };
  beforeAll(async () => {
    fx.lake = await Lakehouse.open({ warehouse: tmp.path, clock });
  });
  afterAll(async () => {
    await fx.lake?.close();
    tmp.cleanup();
  });
  return fx;
}

/** One append a day for `days` days (ids day*10 .. day*10+1); the rows after each, by snapshot. */
async function dailyAppends(fx: ReturnType<typeof lakeWithClock>, t: Table, days: number): Promise<Map<bigint, number[]>> {
  const rows = new Map<bigint, number[]>();
  const all: number[] = [];
  for (let d = 0; d < days; d++) {
    fx.clock.t = T0 + d * DAY;
    const batch = [d * 10, d * 10 + 1];
    const r = await t.append(batch.map((id) => ({ id, day: d })));
    all.push(...batch);
    rows.set(r.snapshotId!, [...all]);
  }
  return rows;
}

const logOf = (fx: { warehouse: string }, name: string) => readdirSync(join(fx.warehouse, 'sales', name, '_delta_log')).sort();

describe('snapshot expiry', () => {
  const fx = lakeWithClock();

  test('keeps the current snapshot and those within retention; time travel to each still works in both formats', async () => {
    const t = fx.lake.table('sales.daily');
    const rows = await dailyAppends(fx, t, 14);
    const ids0 = [...rows.keys()];
    const before = logOf(fx, 'daily');
    fx.clock.t = T0 + 14 * DAY;

    const r = await expireSnapshots(t);
    // Days 7..13 are within 7 days of day 14 (day 7 exactly at the cutoff is kept).
    const expected = ids0.slice(0, 7);
    expect(r.retentionMs).toBe(7 * DAY);
    expect(r.retentionSource).toBe('default');
    expect(r.expiredSnapshots.sort()).toEqual(expected.sort());
    expect(r.kept.find((k) => k.snapshotId === ids0[13])?.reason).toBe('current');
    expect(r.kept.filter((k) => k.reason === 'within retention').map((k) => k.snapshotId).sort()).toEqual(ids0.slice(7, 13).sort());
    expect(r.dataFilesDeleted).toBe(0);
    expect(r.note).toMatch(/orphan_cleanup/);

    const metadata = await t.metadata();
    const left = metadata.snapshots.map((s) => s['snapshot-id']);
    for (const id of expected) expect(left).not.toContain(id);
    expect(left.sort()).toEqual(ids0.slice(7).sort());

    // Delta: the version mirroring day 7's snapshot is the oldest kept, with a checkpoint at it
    // (written by expiry: version 8 is not an interval version), and nothing before it is left.
    const keptFrom = r.delta!.keptFromVersion!;
    const history = await t.history();
    expect(keptFrom).toBe(history.find((h) => h.snapshotId === ids0[7])!.deltaVersion);
    expect(r.delta!.checkpoint).toEqual({ version: keptFrom, file: checkpointPath(keptFrom), written: true });
    const log = logOf(fx, 'daily');
    expect(log).toContain(checkpointPath(keptFrom).slice('_delta_log/'.length));
    for (let v = 0; v < keptFrom; v++) expect(log).not.toContain(commitPath(v).slice('_delta_log/'.length));
    const removed = before.filter((n) => !log.includes(n)).map((n) => `_delta_log/${n}`);
    expect(removed.sort()).toEqual([...r.delta!.removedLogFiles].sort());
    expect(r.bytesFreed).toBeGreaterThan(0);

    // Every retained snapshot and every retained Delta version returns its rows, through our
    // readers and DuckDB over the files each format names.
    for (const id of ids0.slice(7)) {
      expect(ids(await t.read({ snapshotId: id }))).toEqual(rows.get(id));
      expect(ids(await t.read({ snapshotId: id, format: 'delta' }))).toEqual(rows.get(id));
      expect(await duckdbIds(await t.files({ snapshotId: id }))).toEqual(rows.get(id));
    }
    for (const h of history.filter((x) => x.deltaVersion! >= keptFrom)) {
      expect(ids(await t.read({ version: h.deltaVersion!, format: 'delta' }))).toEqual(rows.get(h.snapshotId!));
      expect(await duckdbIds(await t.files({ version: h.deltaVersion!, format: 'delta' }))).toEqual(rows.get(h.snapshotId!));
    }
    expect((await errorOf(t.read({ snapshotId: ids0[3]! }))).kind).toBe('not-found');
    expect((await errorOf(t.read({ version: keptFrom - 1, format: 'delta' }))).kind).toBe('not-found');
    await expectBothEqual(t, rows.get(ids0[13]!)!);
    const v = await t.verify({ allVersions: true });
    expect(v.findings).toEqual([]);
    expect(v.ok).toBe(true);

    // The table goes on: a write after expiry, both formats equal, verify clean.
    fx.clock.t = T0 + 14 * DAY + 1000;
    await t.append([{ id: 500, day: 14 }]);
    await expectBothEqual(t, [...rows.get(ids0[13]!)!, 500]);
    expect((await t.verify({ allVersions: true })).ok).toBe(true);

    // Run again at the same time: nothing more to expire, nothing removed.
    const again = await expireSnapshots(t, { now: T0 + 14 * DAY });
    expect(again.expiredSnapshots).toEqual([]);
    expect(again.delta!.removedLogFiles).toEqual([]);
  });

  test('a tag keeps its snapshot, and the Delta log from the version mirroring it, with the snapshots those versions mirror', async () => {
    const t = fx.lake.table('sales.tagged');
    const rows = await dailyAppends(fx, t, 14);
    const ids0 = [...rows.keys()];
    committedOrThrow(await new Transaction(t.context, [setRef('audit', ids0[4]!, 'tag')]).commit());
    fx.clock.t = T0 + 14 * DAY;
    const r = await expireSnapshots(t);
    expect(r.expiredSnapshots.sort()).toEqual(ids0.slice(0, 4).sort());
    expect(r.kept.find((k) => k.snapshotId === ids0[4])?.reason).toBe('ref audit');
    const history = await t.history();
    const tagVersion = history.find((h) => h.snapshotId === ids0[4])!.deltaVersion!;
    expect(r.delta!.keptFromVersion).toBe(tagVersion);
    for (const d of [5, 6]) expect(r.kept.find((k) => k.snapshotId === ids0[d])?.reason).toMatch(/^delta version \d+ is retained/);
    for (const id of ids0.slice(4)) {
      expect(ids(await t.read({ snapshotId: id }))).toEqual(rows.get(id));
      expect(ids(await t.read({ snapshotId: id, format: 'delta' }))).toEqual(rows.get(id));
    }
    expect(logOf(fx, 'tagged')).not.toContain(commitPath(tagVersion - 1).slice('_delta_log/'.length));
    expect((await t.verify({ allVersions: true })).findings).toEqual([]);
  });

  test('min-snapshots-to-keep keeps the newest snapshots of main whatever their age', async () => {
    const t = fx.lake.table('sales.minkeep');
    const rows = await dailyAppends(fx, t, 6);
    const ids0 = [...rows.keys()];
    fx.clock.t = T0 + 100 * DAY;
    const r = await expireSnapshots(t, { minSnapshotsToKeep: 3 });
    expect(r.expiredSnapshots.sort()).toEqual(ids0.slice(0, 3).sort());
    expect(r.kept.map((k) => k.reason).sort()).toEqual(['current', 'min-snapshots-to-keep', 'min-snapshots-to-keep']);
    for (const id of ids0.slice(3)) expect(ids(await t.read({ snapshotId: id, format: 'delta' }))).toEqual(rows.get(id));
    expect((await t.verify({ allVersions: true })).ok).toBe(true);

    // The table properties say it when no option does; the default keeps one snapshot.
    committedOrThrow(await new Transaction(t.context, [updateProperties({ 'history.expire.min-snapshots-to-keep': '2' })]).commit());
    const byProperty = await expireSnapshots(t);
    expect(byProperty.minSnapshotsToKeep).toBe(2);
    expect(byProperty.expiredSnapshots).toHaveLength(1);
    await expectBothEqual(t, rows.get(ids0[5]!)!);
  });

  test('history.expire.max-snapshot-age-ms sets the retention; a longer delta.logRetentionDuration wins', async () => {
    const t = fx.lake.table('sales.props');
    const rows = await dailyAppends(fx, t, 10);
    const ids0 = [...rows.keys()];
    committedOrThrow(await new Transaction(t.context, [updateProperties({ 'history.expire.max-snapshot-age-ms': String(2 * DAY), 'delta.logRetentionDuration': 'interval 5 days' })]).commit());
    fx.clock.t = T0 + 10 * DAY;
    const dry = await expireSnapshots(t, { dryRun: true });
    expect(dry.retentionMs).toBe(5 * DAY);
    expect(dry.retentionSource).toBe('delta.logRetentionDuration');
    expect(dry.expiredSnapshots.sort()).toEqual(ids0.slice(0, 5).sort());
    committedOrThrow(await new Transaction(t.context, [updateProperties({ 'delta.logRetentionDuration': 'interval 1 day' })]).commit());
    const r = await expireSnapshots(t, { dryRun: true });
    expect(r.retentionMs).toBe(2 * DAY);
    expect(r.retentionSource).toBe('history.expire.max-snapshot-age-ms');
    expect(r.expiredSnapshots.sort()).toEqual(ids0.slice(0, 8).sort());
    const opt = await expireSnapshots(t, { retention: 3 * DAY, dryRun: true });
    expect(opt.retentionSource).toBe('option');
    expect(opt.expiredSnapshots).toHaveLength(7);
  });

  test('a dry run lists what would go and changes nothing', async () => {
    const t = fx.lake.table('sales.dry');
    await dailyAppends(fx, t, 12);
    fx.clock.t = T0 + 12 * DAY;
    const dir = join(fx.warehouse, 'sales', 'dry');
    const files = listFiles(dir);
    const contents = files.map((f) => readFileSync(join(dir, f)).toString('base64'));
    const metadata = await t.metadata();
    const dry = await expireSnapshots(t, { dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.expiredSnapshots).toHaveLength(5);
    expect(dry.delta!.removedLogFiles.length).toBeGreaterThan(0);
    expect(dry.delta!.checkpoint?.written).toBe(false);
    expect(listFiles(dir)).toEqual(files);
    expect(files.map((f) => readFileSync(join(dir, f)).toString('base64'))).toEqual(contents);
    expect(await t.metadata()).toEqual(metadata);
    // The real run does what the dry run listed.
    const real: ExpireResult = await expireSnapshots(t);
    expect(real.expiredSnapshots).toEqual(dry.expiredSnapshots);
    expect(real.delta!.removedLogFiles).toEqual(dry.delta!.removedLogFiles);
    for (const f of real.delta!.removedLogFiles) expect(existsSync(join(dir, f))).toBe(false);
  });

  test('a reader of an old snapshot within retention is unaffected by an expiry running meanwhile', async () => {
    const t = fx.lake.table('sales.race');
    const rows = await dailyAppends(fx, t, 12);
    const ids0 = [...rows.keys()];
    fx.clock.t = T0 + 12 * DAY;
    const old = ids0[6]!;
    const plans = await Promise.all([t.plan({ snapshotId: old }), t.plan({ snapshotId: old, format: 'delta' })]);
    const [iceberg, delta, expiry] = await Promise.all([t.read({ snapshotId: old }), t.read({ snapshotId: old, format: 'delta' }), expireSnapshots(t)]);
    expect(expiry.expiredSnapshots).toHaveLength(5);
    expect(ids(iceberg)).toEqual(rows.get(old));
    expect(ids(delta)).toEqual(rows.get(old));
    // The files planned before expiry are all still there, and read again after it the same.
    for (const p of plans) for (const f of p.task.files) expect(existsSync(new URL(f.path))).toBe(true);
    expect(ids(await t.read({ snapshotId: old, format: 'delta' }))).toEqual(rows.get(old));
  });

  test('an Iceberg-only table expires its snapshots and has no Delta part', async () => {
    const t = fx.lake.table('sales.ice');
    fx.clock.t = T0;
    await t.append([{ id: 1 }], { formats: ['iceberg'] });
    fx.clock.t = T0 + 10 * DAY;
    await t.append([{ id: 2 }]);
    const r = await expireSnapshots(t);
    expect(r.expiredSnapshots).toHaveLength(1);
    expect(r.delta).toBeUndefined();
    expect(ids(await t.read())).toEqual([1, 2]);
  });
});

describe('snapshot expiry when the checkpoint cannot be written', () => {
  const tmp = tempDir();
  let failing = false;
  const { io, stores } = deltaFailingIO(() => failing);
  const clock = { t: T0, nowMs: () => clock.t };
  let lake: Lakehouse;
  beforeAll(async () => {
    lake = await Lakehouse.open({ warehouse: tmp.path, io, clock, onWarning: () => {} });
  });
  afterAll(async () => {
    await lake?.close();
    tmp.cleanup();
  });

  test('removes no Delta log file until the checkpoint exists; the next run finishes the cut', async () => {
    const t = lake.table('sales.faulty');
    const rows = await dailyAppends({ clock } as ReturnType<typeof lakeWithClock>, t, 12);
    const ids0 = [...rows.keys()];
    clock.t = T0 + 12 * DAY;
    const log = () => readdirSync(join(tmp.path, 'sales', 'faulty', '_delta_log')).sort();
    const before = log();
    failing = true;
    const e = await errorOf(expireSnapshots(t));
    failing = false;
    expect(e.message).toMatch(/injected failure: putIfAbsent (.*\/)?00000000000000000006\.checkpoint\.parquet/);
    expect([...stores.values()].some((s) => s.failures.length > 0)).toBe(true);
    // Iceberg committed first; the Delta log is whole, every version still there.
    expect((await t.metadata()).snapshots).toHaveLength(7);
    expect(log()).toEqual(before);
    await expectBothEqual(t, rows.get(ids0[11]!)!);

    const r = await expireSnapshots(t);
    expect(r.expiredSnapshots).toEqual([]);
    expect(r.delta!.keptFromVersion).toBe(6);
    expect(r.delta!.checkpoint).toEqual({ version: 6, file: checkpointPath(6), written: true });
    expect(log()).not.toContain(commitPath(5).slice('_delta_log/'.length));
    for (const id of ids0.slice(5)) expect(ids(await t.read({ snapshotId: id, format: 'delta' }))).toEqual(rows.get(id));
    expect((await t.verify({ allVersions: true })).findings).toEqual([]);
  });
});
