import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse, TwinlakeError } from '../../src/index.ts';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { repoRoot, tempDir } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';
import { readWithIcebird } from '../icebird.ts';

interface Row {
  id: number;
  grp: string;
  v: number;
  note: string | null;
}

/** A deterministic random sequence. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

const canon = (rows: Record<string, unknown>[]) =>
  rows.map((r) => JSON.stringify({ id: Number(r.id), grp: r.grp, v: Number(r.v), note: r.note ?? null })).sort();

async function duckdbOverFiles(dir: string, liveFiles: string[]): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const list = liveFiles.map((f) => `'${f}'`).join(', ');
  const rows = liveFiles.length ? (await c.runAndReadAll(`SELECT id, grp, v, note FROM read_parquet([${list}], union_by_name = true)`)).getRowObjectsJS() : [];
  c.closeSync();
  void dir;
  return rows as Record<string, unknown>[];
}

describe('merge (copy-on-write) against an in-memory model', () => {
  const fx = lakehouseFixture();

  for (const partition of [undefined, 'grp, bucket(4, id)']) {
    it(`20 random rounds of inserts, updates, deletes and duplicate keys${partition ? ` (partitioned by ${partition})` : ''}`, async () => {
      const name = partition ? 'm.partitioned' : 'm.plain';
      const t = fx.lake.table(name);
      const rand = rng(partition ? 7 : 3);
      const model = new Map<number, Row>();
      for (let round = 0; round < 20; round++) {
        const batch: (Row & { op: string; seq: number })[] = [];
        const n = 5 + Math.floor(rand() * 40);
        for (let i = 0; i < n; i++) {
          const id = Math.floor(rand() * 120);
          const op = rand() < 0.15 ? 'D' : 'U';
          batch.push({ id, grp: ['a', 'b', 'c'][id % 3]!, v: Math.floor(rand() * 1000), note: rand() < 0.2 ? null : `r${round}`, op, seq: i });
        }
        // The model: the last record per key wins; 'D' deletes the key.
        const last = new Map<number, (typeof batch)[number]>();
        for (const r of batch) last.set(r.id, r);
        for (const r of last.values()) {
          if (r.op === 'D') model.delete(r.id);
          else model.set(r.id, { id: r.id, grp: r.grp, v: r.v, note: r.note });
        }
        // icebird reads deflate-compressed manifests wrongly: these tables write them uncompressed.
        const result = await t.merge(batch as unknown as Record<string, unknown>[], { keys: ['id'], deleteWhen: "op = 'D'", partition, properties: { 'write.avro.compression-codec': 'uncompressed' } });
        expect(result.inserted + result.updated + result.deleted).toBeLessThanOrEqual(last.size);

        const expected = canon([...model.values()] as unknown as Record<string, unknown>[]);
        const viaIceberg = await t.read();
        const viaDelta = await t.read({ format: 'delta' });
        expect(canon(viaIceberg), `round ${round} iceberg`).toEqual(expected);
        expect(canon(viaDelta), `round ${round} delta`).toEqual(expected);
        const plan = await t.plan();
        const files = plan.task.files.map((f) => f.path.replace(/^file:\/\//, ''));
        expect(canon(await duckdbOverFiles(fx.warehouse, files)), `round ${round} duckdb`).toEqual(expected);
      }
      const h = await t.history();
      expect(h.some((e) => e.operation === 'overwrite')).toBe(true);
      // An Iceberg reader that shares no code with ours sees the same rows.
      const viaIcebird = await readWithIcebird(join(fx.warehouse, ...name.split('.')));
      expect(canon(viaIcebird)).toEqual(canon([...model.values()] as unknown as Record<string, unknown>[]));
    });
  }

  it('uses the greatest --order-by value within a batch, and rewrites only files holding a key', async () => {
    const t = fx.lake.table('m.ordered');
    await t.append(Array.from({ length: 100 }, (_, i) => ({ id: i, grp: `g${i % 10}`, v: 0, note: 'x' })), { partition: 'grp' });
    const r = await t.merge(
      [
        { id: 5, grp: 'g5', v: 9, note: 'late', ts: 3 },
        { id: 5, grp: 'g5', v: 7, note: 'early', ts: 1 },
        { id: 500, grp: 'g0', v: 1, note: 'new', ts: 1 },
      ],
      { keys: ['id'], orderBy: 'ts' },
    );
    expect(r.rewrittenFiles).toBe(1);
    expect(r.updated).toBe(1);
    expect(r.inserted).toBe(1);
    const row5 = (await t.read({ where: 'id = 5' }))[0]!;
    expect(row5.note).toBe('late');
    expect(await t.read({ format: 'delta' })).toHaveLength(101);
  });

  it('deletes by predicate in both formats, rewriting only files with matching rows', async () => {
    const t = fx.lake.table('m.del');
    await t.append(Array.from({ length: 60 }, (_, i) => ({ id: i, grp: ['a', 'b', 'c'][i % 3], v: i })), { partition: 'grp' });
    const r = await t.delete("grp = 'b' AND v > 30");
    expect(r.deleted).toBe(10);
    expect(r.rewrittenFiles).toBe(1);
    for (const format of ['iceberg', 'delta'] as const) {
      const ids = (await t.read({ format })).map((x) => Number(x.id)).sort((a, b) => a - b);
      expect(ids).toEqual(Array.from({ length: 60 }, (_, i) => i).filter((i) => !(i % 3 === 1 && i > 30)));
    }
  });

  it('refuses bad keys and commits nothing', async () => {
    const t = fx.lake.table('m.bad');
    const first = await t.append([{ id: 1, s: { a: 1 }, v: 1 }]);
    const cases: [Record<string, unknown>[], string[], RegExp][] = [
      [[{ id: 2, v: 1 }], ['nope'], /key column nope is missing/],
      [[{ id: null, v: 1 }], ['id'], /null key/],
      [[{ id: 2, s: { a: 2 }, v: 1 }], ['s'], /nested type/],
    ];
    for (const [batch, keys, message] of cases) {
      const err = await t.merge(batch, { keys }).catch((e) => e);
      expect(err).toBeInstanceOf(TwinlakeError);
      expect(err.message).toMatch(message);
    }
    const d = await t.describe();
    expect(d.currentSnapshotId).toBe(first.snapshotId);
    expect(d.deltaVersion).toBe(first.deltaVersion);
  });
});

describe('two merging processes on one table', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('both succeed and every key appears once, in both formats', async () => {
    const lake = await Lakehouse.open({ warehouse: tmp.path });
    // Both writers' keys start in the same file, so their rewrites collide and must be re-run.
    await lake.table('mc.t').append([...Array.from({ length: 40 }, (_, i) => ({ id: i, owner: 'seed', round: -1 })), ...Array.from({ length: 40 }, (_, i) => ({ id: 1000 + i, owner: 'seed', round: -1 }))]);
    await lake.close();
    const [a, b] = await Promise.all([worker(['merge-worker.ts', tmp.path, 'mc.t', 'A', '6']), worker(['merge-worker.ts', tmp.path, 'mc.t', 'B', '6'])]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const check = await Lakehouse.open({ warehouse: tmp.path });
    try {
      for (const format of ['iceberg', 'delta'] as const) {
        const rows = await check.table('mc.t').read({ format });
        const ids = rows.map((r) => Number(r.id)).sort((x, y) => x - y);
        expect(ids).toEqual([...Array.from({ length: 40 }, (_, i) => i), ...Array.from({ length: 40 }, (_, i) => 1000 + i)]);
        // The last round of each writer covers 20 of its keys.
        expect(rows.filter((r) => r.owner === 'A' && Number(r.round) === 5)).toHaveLength(20);
        expect(rows.filter((r) => r.owner === 'B' && Number(r.round) === 5)).toHaveLength(20);
      }
    } finally {
      await check.close();
    }
  });
});

function worker(args: string[]): Promise<{ code: number; stderr: string }> {
  const [script, ...rest] = args;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/workers', script!), ...rest], { cwd: repoRoot });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stderr }));
  });
}
