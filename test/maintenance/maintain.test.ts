import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { runMaintenance, type FullMaintenanceResult } from '../../src/maintenance/maintain.ts';
import type { ExpireResult } from '../../src/maintenance/expire.ts';
import { checkpointPath } from '../../src/format/delta/actions.ts';
import { cli, errorOf, listFiles, tempDir } from '../helpers.ts';
import { expectBothEqual, ids } from '../both-formats.ts';
import { startServer, type TestServer } from '../server/server-fixture.ts';

/**
 * The one maintenance dispatcher, `twinlake maintain` and the API's maintenance route, on tables
 * whose history was written by a lakehouse with a clock 20 days back (the CLI and the server run
 * on the real clock).
 */

const DAY = 86400e3;

/** `days` appends a day apart, the newest half a day ago (ages 0.5, 1.5, … days); the ids of the rows. */
async function writeHistory(warehouse: string, name: string, days: number): Promise<number[]> {
  const start = Date.now() - (days - 1) * DAY - DAY / 2;
  const clock = { t: start, nowMs: () => clock.t };
  const lake = await Lakehouse.open({ warehouse, clock, onWarning: () => {} });
  const all: number[] = [];
  try {
    for (let d = 0; d < days; d++) {
      clock.t = start + d * DAY;
      await lake.table(name).append([{ id: d }]);
      all.push(d);
    }
  } finally {
    await lake.close();
  }
  return all;
}

describe('runMaintenance', () => {
  const tmp = tempDir();
  let lake: Lakehouse;
  beforeAll(async () => {
    lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => {} });
  });
  afterAll(async () => {
    await lake?.close();
    tmp.cleanup();
  });

  test('every operation runs through the one dispatcher and names itself in its result', async () => {
    const all = await writeHistory(tmp.path, 'ops.events', 12);
    const t = lake.table('ops.events');
    const r = (await runMaintenance(t, 'snapshot_expiry', { retention: 5 * DAY })) as ExpireResult & { durationMs?: number };
    expect(r.operation).toBe('snapshot_expiry');
    expect(r.expiredSnapshots).toHaveLength(7);
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    await expectBothEqual(t, all);

    const cp = await runMaintenance(t, 'delta_checkpoint');
    expect(cp).toMatchObject({ operation: 'delta_checkpoint', deltaVersion: 12, checkpoint: checkpointPath(12), existed: false });
    expect(existsSync(join(tmp.path, 'ops', 'events', checkpointPath(12)))).toBe(true);

    const dir = join(tmp.path, 'ops', 'events');
    const files = listFiles(dir);
    for (const op of ['compaction', 'orphan_cleanup', 'metadata_cleanup']) {
      expect(await runMaintenance(t, op, { dryRun: true })).toMatchObject({ operation: op, dryRun: true });
    }
    expect(listFiles(dir)).toEqual(files);
    const bad = await errorOf(runMaintenance(t, 'vacuum'));
    expect(bad.kind).toBe('invalid-input');
    expect(bad.message).toMatch(/^maintenance: expected an operation of snapshot_expiry, .* found "vacuum"$/);
  });

  test('full_maintenance runs every operation in the safe order', async () => {
    const all = await writeHistory(tmp.path, 'ops.full', 12);
    const t = lake.table('ops.full');
    const dir = join(tmp.path, 'ops', 'full');
    const files = listFiles(dir);
    const dry = (await runMaintenance(t, 'full_maintenance', { dryRun: true })) as FullMaintenanceResult;
    expect(listFiles(dir)).toEqual(files);
    expect(dry.steps.map((s) => [s.operation, s.status])).toEqual([
      ['compaction', 'completed'],
      ['snapshot_expiry', 'completed'],
      ['delta_checkpoint', 'completed'],
      ['metadata_cleanup', 'completed'],
      ['orphan_cleanup', 'completed'],
    ]);
    const r = (await runMaintenance(t, 'full_maintenance')) as FullMaintenanceResult;
    const expiry = r.steps[1]!.status === 'completed' ? (r.steps[1]!.result as ExpireResult) : undefined;
    expect(expiry?.expiredSnapshots).toEqual((dry.steps[1] as { result: ExpireResult }).result.expiredSnapshots);
    expect(expiry?.expiredSnapshots).toHaveLength(5);
    // Compaction went first: its replace snapshot is current, beside the 7 within retention.
    const compaction = r.steps[0]!.status === 'completed' ? (r.steps[0]!.result as { filesBefore: number; filesAfter: number }) : undefined;
    expect(compaction!.filesAfter).toBeLessThan(compaction!.filesBefore);
    expect((await t.metadata()).snapshots).toHaveLength(8);
    // ... and its Delta version (13, OPTIMIZE) is the one checkpointed.
    expect((await t.describe()).deltaVersion).toBe(13);
    expect(readdirSync(join(dir, '_delta_log'))).toContain(checkpointPath(13).slice('_delta_log/'.length));
    await expectBothEqual(t, all);
    expect((await t.verify({ allVersions: true })).ok).toBe(true);
  });

  test('full_maintenance on an Iceberg-only table skips the Delta checkpoint and says why', async () => {
    const t = lake.table('ops.ice');
    await t.append([{ id: 1 }], { formats: ['iceberg'] });
    const r = (await runMaintenance(t, 'full_maintenance')) as FullMaintenanceResult;
    expect(r.steps[2]).toMatchObject({ operation: 'delta_checkpoint', status: 'skipped' });
    expect((r.steps[2] as { reason: string }).reason).toMatch(/needs a Delta table/);
    expect(ids(await t.read())).toEqual([1]);
  });
});

describe('twinlake maintain', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  test('--dry-run lists and changes nothing; the run expires, removes the Delta log behind a checkpoint, --json gives the result', async () => {
    const all = await writeHistory(tmp.path, 'sales.orders', 12);
    const dir = join(tmp.path, 'sales', 'orders');
    const files = listFiles(dir);
    const dry = cli(['maintain', 'sales.orders', '--operation', 'snapshot_expiry', '--retention', '7d', '--dry-run', '--warehouse', tmp.path]);
    expect(dry.stderr).toBe('');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^sales\.orders: snapshot_expiry \(dry run\): retention 7d \(option\), at least 1 snapshot\(s\) kept/);
    expect(dry.stdout).toContain('would expire 5 snapshot(s)');
    expect(dry.stdout).toMatch(/delta: would remove \d+ log file\(s\) before version 6/);
    expect(listFiles(dir)).toEqual(files);

    const run = cli(['maintain', 'sales.orders', '--operation', 'snapshot_expiry', '--json', '--warehouse', tmp.path]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const r = JSON.parse(run.stdout);
    expect(r).toMatchObject({ operation: 'snapshot_expiry', dryRun: false, retentionSource: 'default', dataFilesDeleted: 0 });
    expect(r.expiredSnapshots).toHaveLength(5);
    expect(r.delta.keptFromVersion).toBe(6);
    expect(r.delta.checkpoint).toEqual({ version: 6, file: checkpointPath(6), written: true });
    for (const f of r.delta.removedLogFiles) expect(existsSync(join(dir, f))).toBe(false);
    const lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => {} });
    try {
      await expectBothEqual(lake.table('sales.orders'), all);
    } finally {
      await lake.close();
    }
  });

  test('bad input: an unknown operation, a bad retention, a bad size; compaction from the command line', async () => {
    await writeHistory(tmp.path, 'sales.bad', 2);
    const unknown = cli(['maintain', 'sales.bad', '--operation', 'vacuum', '--warehouse', tmp.path]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/maintenance: expected an operation of snapshot_expiry, .* found "vacuum"/);
    const retention = cli(['maintain', 'sales.bad', '--operation', 'snapshot_expiry', '--retention', 'a week', '--warehouse', tmp.path]);
    expect(retention.code).toBe(3);
    expect(retention.stderr).toContain('maintain: --retention expects a duration such as "7d", "36h" or "2w", found "a week"');
    const size = cli(['maintain', 'sales.bad', '--operation', 'compaction', '--target-file-size', 'big', '--warehouse', tmp.path]);
    expect(size.code).toBe(3);
    expect(size.stderr).toContain('maintain: --target-file-size expects a size such as "128MiB" or "512MB", found "big"');
    const compacted = cli(['maintain', 'sales.bad', '--operation', 'compaction', '--warehouse', tmp.path]);
    expect([compacted.code, compacted.stderr]).toEqual([0, '']);
    expect(compacted.stdout).toMatch(/^sales\.bad: compaction: 2 → 1 data files/);
    const missing = cli(['maintain', 'sales.bad', '--warehouse', tmp.path]);
    expect(missing.code).toBe(2);
  });
});

describe('POST /maintenance', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  test('snapshot_expiry with retention and dryRun, full_maintenance, and every operation through the API', async () => {
    const all = await writeHistory(s.warehouse, 'api.orders', 10);
    const t = s.lake.table('api.orders');
    const tableId = (await t.describe()).tableUuid;
    const url = `/api/managed-lakehouse/tables/${tableId}/maintenance`;
    const dir = join(s.warehouse, 'api', 'orders');
    const files = listFiles(dir);

    const dry = await s.call('POST', url, { body: { operation: 'snapshot_expiry', retention: '3d', dryRun: true } });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.json).toMatchObject({ tableId, operation: 'snapshot_expiry', status: 'completed', dryRun: true, retentionMs: 3 * DAY });
    expect(dry.json.expiredSnapshots).toHaveLength(7);
    expect(dry.json.expiredSnapshots.every((id: unknown) => typeof id === 'string')).toBe(true);
    expect(listFiles(dir)).toEqual(files);

    const run = await s.call('POST', url, { body: { operation: 'snapshot_expiry', retention: 3 * DAY } });
    expect(run.status, run.text).toBe(200);
    expect(run.json.expiredSnapshots).toEqual(dry.json.expiredSnapshots);
    const left = (await t.metadata()).snapshots.map((x) => String(x['snapshot-id']));
    for (const id of run.json.expiredSnapshots) expect(left).not.toContain(id);
    await expectBothEqual(t, all);

    const full = await s.call('POST', url, { body: { operation: 'full_maintenance' } });
    expect(full.status, full.text).toBe(200);
    expect(full.json.steps.map((x: { operation: string; status: string }) => `${x.operation} ${x.status}`)).toEqual([
      'compaction completed',
      'snapshot_expiry completed',
      'delta_checkpoint completed',
      'metadata_cleanup completed',
      'orphan_cleanup completed',
    ]);
    await expectBothEqual(t, all);

    for (const operation of ['compaction', 'orphan_cleanup', 'metadata_cleanup']) {
      const n = await s.call('POST', url, { body: { operation } });
      expect(n.status, n.text).toBe(200);
      expect(n.json).toMatchObject({ operation, status: 'completed' });
    }
    await expectBothEqual(t, all);
    const bad = await s.call('POST', url, { body: { operation: 'snapshot_expiry', retention: 'soon' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toContain('maintenance: retention expects a duration such as "7d", "36h" or "2w", found "soon"');
    const reader = await s.call('POST', url, { token: s.tokens.read, body: { operation: 'snapshot_expiry' } });
    expect(reader.status).toBe(403);
  });
});
