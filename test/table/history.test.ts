import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { tempDir } from '../helpers.ts';

/** 30 appends: Delta checkpoints at 10, 20, 30, and every version and snapshot reads correctly. */
describe('30 appends in a row', () => {
  const tmp = tempDir();
  let lake: Lakehouse;
  const snapshots: bigint[] = [];
  const deltaVersions: number[] = [];

  beforeAll(async () => {
    lake = await Lakehouse.open({ warehouse: tmp.path });
    const t = lake.table('hist.t');
    for (let i = 0; i < 30; i++) {
      const rows = Array.from({ length: i + 1 }, (_, j) => ({ batch: i, seq: j, label: `b${i}-${j}` }));
      const r = await t.append(rows);
      expect(r.deltaCommitted).toBe(true);
      snapshots.push(r.snapshotId!);
      deltaVersions.push(r.deltaVersion!);
    }
  });
  afterAll(async () => {
    await lake.close();
    tmp.cleanup();
  });

  it('numbers Delta versions 1..30 after the creation version 0', () => {
    expect(deltaVersions).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it('writes classic checkpoints at 10, 20 and 30 and points _last_checkpoint at 30', () => {
    const log = join(tmp.path, 'hist', 't', '_delta_log');
    for (const v of [10, 20, 30]) expect(existsSync(join(log, `${String(v).padStart(20, '0')}.checkpoint.parquet`))).toBe(true);
    for (const v of [9, 11, 29]) expect(existsSync(join(log, `${String(v).padStart(20, '0')}.checkpoint.parquet`))).toBe(false);
    const last = JSON.parse(readFileSync(join(log, '_last_checkpoint'), 'utf8'));
    expect(last.version).toBe(30);
  });

  it('reads every snapshot and every Delta version with the rows it had', async () => {
    const t = lake.table('hist.t');
    for (let i = 0; i < 30; i++) {
      const expected = ((i + 1) * (i + 2)) / 2;
      const viaIceberg = await t.read({ snapshotId: snapshots[i] });
      const viaDelta = await t.read({ format: 'delta', version: deltaVersions[i] });
      expect(viaIceberg).toHaveLength(expected);
      expect(viaDelta).toHaveLength(expected);
      const key = (r: Record<string, unknown>) => `${r.batch}/${r.seq}/${r.label}`;
      expect(viaDelta.map(key).sort()).toEqual(viaIceberg.map(key).sort());
      expect(Math.max(...viaIceberg.map((r) => Number(r.batch)))).toBe(i);
    }
    expect(await t.read({ format: 'delta', version: 0 })).toHaveLength(0);
  });

  it('history lists 30 snapshots newest first with their Delta versions', async () => {
    const h = await lake.table('hist.t').history();
    expect(h).toHaveLength(30);
    expect(h[0]!.snapshotId).toBe(snapshots[29]);
    expect(h.map((e) => e.deltaVersion)).toEqual([...deltaVersions].reverse());
    expect(h[0]!.totalRecords).toBe((30 * 31) / 2);
  });

  it('reads as of a time between two commits', async () => {
    const t = lake.table('hist.t');
    const h = (await t.history()).reverse();
    const at = h[14]!.timestamp;
    const rows = await t.read({ asOf: at });
    expect(rows).toHaveLength((15 * 16) / 2);
    const viaDelta = await t.read({ asOf: at, format: 'delta' });
    expect(viaDelta).toHaveLength((15 * 16) / 2);
  });
});
