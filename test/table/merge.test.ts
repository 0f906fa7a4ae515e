import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse, TwinlakeError, type Table } from '../../src/index.ts';
import { readdir, readFile } from 'node:fs/promises';
import { loadDeletionVectors } from '../../src/engine/read-scan.ts';
import type { ScanTask } from '../../src/format/scan-task.ts';
import { join } from 'node:path';
import { runWorker, tempDir } from '../helpers.ts';
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

/**
 * The table's rows read by DuckDB straight from the live files of the plan, with the deletes
 * applied in SQL: position delete files are read by DuckDB too; deletion vectors (Puffin) are
 * decoded to positions first.
 */
async function duckdbOverFiles(task: ScanTask): Promise<Record<string, unknown>[]> {
  if (task.files.length === 0) return [];
  const loaded = await loadDeletionVectors(task);
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const local = (uri: string) => uri.replace(/^file:\/\//, '');
  const list = loaded.files.map((f) => `'${local(f.path)}'`).join(', ');
  const deleted: string[] = [];
  for (const f of loaded.files) {
    for (const p of f.deletes?.positions ?? []) {
      if (p.kind === 'position-file') deleted.push(`SELECT '${local(f.path)}' AS f, pos FROM read_parquet('${local(p.path)}') WHERE file_path = '${p.dataFile}'`);
      else if (p.kind === 'bitmap') deleted.push(`SELECT '${local(f.path)}' AS f, unnest([${[...p.bitmap.values()].join(', ')}]::BIGINT[]) AS pos`);
      else throw new Error(`unexpected ${p.kind}`);
    }
  }
  const scan = `SELECT * FROM read_parquet([${list}], union_by_name = true, filename = true, file_row_number = true)`;
  const sql = deleted.length
    ? `SELECT id, grp, v, note FROM (${scan}) AS t ANTI JOIN (${deleted.join(' UNION ALL ')}) AS d ON t.filename = d.f AND t.file_row_number = d.pos`
    : `SELECT id, grp, v, note FROM (${scan})`;
  const rows = (await c.runAndReadAll(sql)).getRowObjectsJS();
  c.closeSync();
  return rows as Record<string, unknown>[];
}

describe('merge against an in-memory model', () => {
  const fx = lakehouseFixture();

  const cases = [
    { strategy: 'copy-on-write', version: '2', partition: undefined },
    { strategy: 'copy-on-write', version: '2', partition: 'grp, bucket(4, id)' },
    { strategy: 'merge-on-read', version: '2', partition: undefined },
    { strategy: 'merge-on-read', version: '2', partition: 'grp, bucket(4, id)' },
    { strategy: 'merge-on-read', version: '3', partition: undefined },
    { strategy: 'merge-on-read', version: '3', partition: 'grp, bucket(4, id)' },
  ] as const;
  for (const { strategy, version, partition } of cases) {
    it(`20 random rounds of inserts, updates, deletes and duplicate keys: ${strategy}, v${version}${partition ? `, partitioned by ${partition}` : ''}`, async () => {
      const name = `m.${strategy === 'copy-on-write' ? 'cow' : 'mor'}_v${version}${partition ? '_partitioned' : ''}`;
      const t = fx.lake.table(name);
      const rand = rng((partition ? 7 : 3) + Number(version) * 10 + (strategy === 'copy-on-write' ? 0 : 100));
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
        const properties = { 'write.avro.compression-codec': 'uncompressed', 'write.merge.mode': strategy, 'format-version': version };
        const result = await t.merge(batch as unknown as Record<string, unknown>[], { keys: ['id'], deleteWhen: "op = 'D'", partition, properties });
        expect(result.inserted + result.updated + result.deleted).toBeLessThanOrEqual(last.size);
        if (round > 0) expect(result.strategy).toBe(strategy);
        if (strategy === 'merge-on-read') expect(result.rewrittenFiles).toBe(0);
        if (strategy === 'merge-on-read' && result.updated + result.deleted > 0) expect(result.deleteFiles).toBeGreaterThan(0);

        const expected = canon([...model.values()] as unknown as Record<string, unknown>[]);
        const viaIceberg = await t.read();
        const viaDelta = await t.read({ format: 'delta' });
        expect(canon(viaIceberg), `round ${round} iceberg`).toEqual(expected);
        expect(canon(viaDelta), `round ${round} delta`).toEqual(expected);
        const plan = await t.plan();
        expect(canon(await duckdbOverFiles(plan.task)), `round ${round} duckdb`).toEqual(expected);
        if (strategy === 'merge-on-read') await expectOneDeleteFilePerDataFile(t, `round ${round}`);
      }
      const h = await t.history();
      expect(h.some((e) => e.operation === 'overwrite')).toBe(true);
      const d = await t.describe();
      expect(d.formatVersion).toBe(Number(version));
      if (strategy === 'merge-on-read') {
        // The checkpoint of version 20 carries the DVs: DuckDB reads them from the Parquet.
        const checkpoint = join(fx.warehouse, ...name.split('.'), '_delta_log', `${String(20).padStart(20, '0')}.checkpoint.parquet`);
        const db = await DuckDBInstance.create(':memory:');
        const c = await db.connect();
        const [row] = (await c.runAndReadAll(`SELECT count(*) FILTER (WHERE "add".deletionVector IS NOT NULL) AS dvs, count("add") AS adds, sum("add".deletionVector.cardinality) AS deleted FROM read_parquet('${checkpoint}')`)).getRowObjectsJS();
        c.closeSync();
        const deltaPlan = await t.plan({ format: 'delta' });
        const withDv = deltaPlan.task.files.filter((f) => f.deletes?.positions?.length);
        expect(Number(row!.adds)).toBe(deltaPlan.task.files.length);
        expect(Number(row!.dvs)).toBe(withDv.length);
        const stored = deltaPlan.task.files.reduce((n, f) => n + (f.recordCount ?? 0), 0);
        expect(stored - Number(row!.deleted)).toBe(model.size);
        const protocol = await deltaProtocol(join(fx.warehouse, ...name.split('.')));
        expect(protocol.readerFeatures).toContain('deletionVectors');
        expect(protocol.writerFeatures).toContain('deletionVectors');
      }
      // An Iceberg reader that shares no code with ours sees the same rows (it reads v2 position
      // deletes; v3 deletion vectors are beyond it).
      if (version === '2') {
        const viaIcebird = await readWithIcebird(join(fx.warehouse, ...name.split('.')));
        expect(canon(viaIcebird)).toEqual(canon([...model.values()] as unknown as Record<string, unknown>[]));
      }
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

/** At most one delete file (DV or position delete file) applies to each live data file, and Delta agrees. */
async function expectOneDeleteFilePerDataFile(t: Table, where: string): Promise<void> {
  const plan = await t.plan();
  for (const f of plan.task.files) expect((f.deletes?.positions ?? []).length, `${where}: ${f.path}`).toBeLessThanOrEqual(1);
  const delta = await t.plan({ format: 'delta' });
  const withDv = delta.task.files.filter((f) => (f.deletes?.positions ?? []).length > 0).map((f) => f.path).sort();
  expect(withDv, `${where}: delta files with DVs`).toEqual(plan.task.files.filter((f) => (f.deletes?.positions ?? []).length > 0).map((f) => f.path).sort());
}

async function deltaProtocol(tableDir: string): Promise<{ readerFeatures?: string[]; writerFeatures?: string[] }> {
  const log = join(tableDir, '_delta_log');
  let protocol = {};
  for (const name of (await readdir(log)).filter((n) => n.endsWith('.json') && !n.startsWith('_')).sort()) {
    for (const line of (await readFile(join(log, name), 'utf8')).split('\n').filter(Boolean)) {
      const action = JSON.parse(line);
      if (action.protocol) protocol = action.protocol;
    }
  }
  return protocol;
}

describe('two merging processes on one table', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  const cases = [
    { strategy: 'copy-on-write', version: '2' },
    { strategy: 'merge-on-read', version: '2' },
    { strategy: 'merge-on-read', version: '3' },
  ] as const;
  for (const { strategy, version } of cases) {
    it(`both succeed and every key appears once, in both formats (${strategy}, v${version})`, async () => {
      const table = `mc.${strategy === 'copy-on-write' ? 'cow' : 'mor'}_v${version}`;
      const lake = await Lakehouse.open({ warehouse: tmp.path });
      // Both writers' keys start in the same file, so their changes collide and must be re-run.
      const seed = [...Array.from({ length: 40 }, (_, i) => ({ id: i, owner: 'seed', round: -1 })), ...Array.from({ length: 40 }, (_, i) => ({ id: 1000 + i, owner: 'seed', round: -1 }))];
      await lake.table(table).append(seed, { properties: { 'format-version': version } });
      await lake.close();
      const [a, b] = await Promise.all([runWorker('merge-worker.ts', [tmp.path, table, 'A', '6', strategy]), runWorker('merge-worker.ts', [tmp.path, table, 'B', '6', strategy])]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const check = await Lakehouse.open({ warehouse: tmp.path });
      try {
        for (const format of ['iceberg', 'delta'] as const) {
          const rows = await check.table(table).read({ format });
          const ids = rows.map((r) => Number(r.id)).sort((x, y) => x - y);
          expect(ids).toEqual([...Array.from({ length: 40 }, (_, i) => i), ...Array.from({ length: 40 }, (_, i) => 1000 + i)]);
          // The last round of each writer covers 20 of its keys.
          expect(rows.filter((r) => r.owner === 'A' && Number(r.round) === 5)).toHaveLength(20);
          expect(rows.filter((r) => r.owner === 'B' && Number(r.round) === 5)).toHaveLength(20);
        }
        if (strategy === 'merge-on-read') await expectOneDeleteFilePerDataFile(check.table(table), table);
      } finally {
        await check.close();
      }
    });
  }
});

