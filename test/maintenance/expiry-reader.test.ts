import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Lakehouse, type Table } from '../../src/index.ts';
import type { ObjectMeta } from '../../src/io/object-store.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { expireSnapshots } from '../../src/maintenance/expire.ts';
import { runMaintenance } from '../../src/maintenance/maintain.ts';
import { cleanMetadata } from '../../src/maintenance/metadata-cleanup.ts';
import { removeOrphans } from '../../src/maintenance/orphans.ts';
import { HookedStore } from '../faults.ts';
import { errorOf, repoRoot, tempDir } from '../helpers.ts';

/**
 * Snapshot expiry and every cleanup running while reader processes hold old snapshots: one
 * within retention reads its rows every time, in both formats, before, during and after; one
 * outside retention gets its rows until expiry and a clear not-found after it, never other rows.
 */

const DAY = 86400e3;
const HOUR = 3600e3;

interface ReadLine {
  format: 'iceberg' | 'delta';
  at: number;
  done: number;
  ids?: number[];
  kind?: string;
  message?: string;
}

/** A running test/workers/snapshot-reader.ts: its lines so far, and how to stop it. */
function startReader(warehouse: string, table: string, snapshotId: bigint, version: number, stopFile: string) {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/workers/snapshot-reader.ts'), warehouse, table, String(snapshotId), String(version), stopFile], { cwd: repoRoot });
  const lines: ReadLine[] = [];
  let buffer = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => {
    buffer += d.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const p of parts) if (p.trim()) lines.push(JSON.parse(p) as ReadLine);
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)));
  return {
    lines,
    /** Resolves once `n` reads have ended after `since` (ms since the epoch). */
    async readsAfter(since: number, n: number, timeoutMs = 60_000): Promise<void> {
      const until = Date.now() + timeoutMs;
      while (lines.filter((l) => l.at >= since).length < n) {
        if (Date.now() > until) throw new Error(`reader: expected ${n} reads after ${since}, found ${lines.filter((l) => l.at >= since).length}; stderr: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop(): Promise<{ code: number; stderr: string }> {
      writeFileSync(stopFile, '');
      return { code: await exited, stderr };
    },
    kill: () => child.kill('SIGKILL'),
  };
}

describe('snapshot expiry racing reader processes', () => {
  const tmp = tempDir();
  const T0 = Date.now() - 20 * DAY;
  const clock = { t: T0, nowMs: () => clock.t };
  let lake: Lakehouse;
  const readers: ReturnType<typeof startReader>[] = [];
  beforeAll(async () => {
    lake = await Lakehouse.open({ warehouse: tmp.path, clock, onWarning: () => {} });
  });
  afterAll(async () => {
    for (const r of readers) r.kill();
    await lake?.close();
    tmp.cleanup();
  });

  test('a reader within retention always gets its rows; one outside it gets its rows, then a clear not-found', async () => {
    const t: Table = lake.table('race.reads');
    // A commit a day for 14 days (ids 10d, 10d+1), a checkpoint every 5 versions: the held
    // version is read from an older checkpoint than the one expiry cuts the log at.
    const rows = new Map<bigint, number[]>();
    const versions = new Map<bigint, number>();
    const all: number[] = [];
    for (let d = 0; d < 14; d++) {
      clock.t = T0 + d * DAY;
      const w = await t.append([{ id: d * 10 }, { id: d * 10 + 1 }], d === 0 ? { properties: { 'delta.checkpointInterval': '5' } } : {});
      all.push(d * 10, d * 10 + 1);
      rows.set(w.snapshotId!, [...all]);
      versions.set(w.snapshotId!, w.deltaVersion!);
    }
    const ids0 = [...rows.keys()];
    clock.t = T0 + 14 * DAY;
    // Day 8 stays within the 7-day retention through every round below; day 2 is outside it.
    const held = ids0[8]!;
    const doomed = ids0[2]!;
    const inside = startReader(tmp.path, 'race.reads', held, versions.get(held)!, join(tmp.path, 'stop-inside'));
    const outside = startReader(tmp.path, 'race.reads', doomed, versions.get(doomed)!, join(tmp.path, 'stop-outside'));
    readers.push(inside, outside);
    const start = Date.now();
    await inside.readsAfter(start - 60_000, 2);
    await outside.readsAfter(start - 60_000, 2);

    // Rounds of writes and maintenance: expiry, orphan cleanup and metadata cleanup past their
    // safety windows, full_maintenance (compaction first, so the held snapshot's files are
    // replaced in the current one and kept only because it is retained).
    const maintenanceFrom = Date.now();
    let expiredAt: number | undefined;
    for (let round = 0; round < 3; round++) {
      clock.t += 3 * HOUR;
      await t.append([{ id: 1000 + round }]);
      const e = await expireSnapshots(t);
      if (round === 0) {
        expect(e.expiredSnapshots).toContain(doomed);
        expect(e.expiredSnapshots).not.toContain(held);
        expiredAt = Date.now();
      }
      await removeOrphans(t, { now: Date.now() + 4 * DAY });
      await cleanMetadata(t, { now: Date.now() + 31 * DAY });
      await runMaintenance(t, 'full_maintenance');
      await removeOrphans(t, { now: Date.now() + 4 * DAY });
    }
    const maintenanceTo = Date.now();
    await inside.readsAfter(maintenanceTo, 4);
    await outside.readsAfter(maintenanceTo, 4);
    const a = await inside.stop();
    const b = await outside.stop();
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);

    // The reader within retention: every read, in both formats, the held snapshot's rows; and
    // reads overlapped the maintenance.
    const want = rows.get(held)!;
    for (const l of inside.lines) expect(l, JSON.stringify(l)).toEqual({ format: l.format, at: l.at, done: l.done, ids: want });
    const during = inside.lines.filter((l) => l.done >= maintenanceFrom && l.at <= maintenanceTo);
    expect(during.filter((l) => l.format === 'iceberg').length).toBeGreaterThan(0);
    expect(during.filter((l) => l.format === 'delta').length).toBeGreaterThan(0);

    // The reader outside retention: its own rows or an error, never other rows; once expiry has
    // committed, a not-found naming the snapshot or version.
    const old = rows.get(doomed)!;
    for (const l of outside.lines) if (l.ids) expect(l.ids, JSON.stringify(l)).toEqual(old);
    const after = outside.lines.filter((l) => l.at > maintenanceTo);
    expect(after.length).toBeGreaterThanOrEqual(4);
    for (const l of after) {
      expect(l.kind, JSON.stringify(l)).toBe('not-found');
      expect(l.message).toMatch(l.format === 'iceberg' ? new RegExp(String(doomed)) : new RegExp(`version ${versions.get(doomed)}\\b`));
    }
    expect(outside.lines.some((l) => l.ids && l.at < expiredAt!)).toBe(true);

    // The table itself: every row, both formats.
    expect((await t.read()).map((r) => Number(r.id)).sort((x, y) => x - y)).toEqual([...all, 1000, 1001, 1002]);
    expect((await t.verify({ allVersions: true })).findings).toEqual([]);
  }, 180_000);
});

/** The next listing of a Delta log through a PausingStore runs this once it has listed every file, before the reader goes on. */
const pause: { afterListing?: () => Promise<void> } = {};

class PausingStore extends HookedStore {
  override async *list(prefix: string): AsyncIterable<ObjectMeta> {
    for await (const o of super.list(prefix)) yield o;
    const hook = prefix.includes('_delta_log') ? pause.afterListing : undefined;
    if (hook) {
      pause.afterListing = undefined;
      await hook();
    }
  }
}

describe('a Delta reader between listing the log and reading it', () => {
  const tmp = tempDir();
  const T0 = Date.now() - 20 * DAY;
  const clock = { t: T0, nowMs: () => clock.t };
  let lake: Lakehouse;
  let readerLake: Lakehouse;
  beforeAll(async () => {
    lake = await Lakehouse.open({ warehouse: tmp.path, clock, onWarning: () => {} });
    const io = new FileIO((uri) => {
      const { store, key } = storeForLocation(uri);
      return { store: new PausingStore(store), key };
    });
    readerLake = await Lakehouse.open({ warehouse: tmp.path, io, onWarning: () => {} });
  });
  afterAll(async () => {
    await readerLake?.close();
    await lake?.close();
    tmp.cleanup();
  });

  test('an expiry that cuts the log behind a newer checkpoint meanwhile does not break a read of a retained version', async () => {
    const t = lake.table('cut.reads');
    const rows = new Map<number, number[]>();
    const all: number[] = [];
    for (let d = 0; d < 14; d++) {
      clock.t = T0 + d * DAY;
      const w = await t.append([{ id: d }], d === 0 ? { properties: { 'delta.checkpointInterval': '5' } } : {});
      all.push(d);
      rows.set(w.deltaVersion!, [...all]);
    }
    clock.t = T0 + 14 * DAY;
    // Version 9 is read from checkpoint 5 and commits 6-9; expiry keeps the log from version 8
    // (day 7), writes a checkpoint there and removes everything before it.
    const version = [...rows.keys()].find((v) => rows.get(v)!.length === 9)!;
    const reader = readerLake.table('cut.reads');
    let expired: Awaited<ReturnType<typeof expireSnapshots>> | undefined;
    pause.afterListing = async () => void (expired = await expireSnapshots(t));
    const read = await reader.read({ format: 'delta', version });
    expect(expired?.delta?.removedLogFiles.length).toBeGreaterThan(0);
    expect(expired!.delta!.keptFromVersion).toBeLessThanOrEqual(version);
    expect(read.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(rows.get(version));
    // A version the cut removed is a clear not-found.
    const gone = await errorOf(reader.read({ format: 'delta', version: expired!.delta!.keptFromVersion! - 1 }));
    expect(gone.kind).toBe('not-found');
  });
});
