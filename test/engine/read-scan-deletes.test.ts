import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { duckdbFixture } from '../duckdb-fixture.ts';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { fileUri } from '../../src/core/uri.ts';
import { copyScanTo, loadDeletionVectors, readScan, scanRelationSql } from '../../src/engine/read-scan.ts';
import { encodeDeletionVectorFile } from '../../src/format/delta/deletion-vector.ts';
import { encodeDeletionVectorPuffin } from '../../src/format/iceberg/puffin.ts';
import type { Schema } from '../../src/format/iceberg/types.ts';
import { RoaringBitmap64 } from '../../src/format/roaring.ts';
import type { ScanFile, ScanTask } from '../../src/format/scan-task.ts';

/**
 * Row-level deletes in the engine, on files written here: every expectation is computed from the
 * rows' own values (each row's `id` is its position times 10 plus the file number), not from
 * what the engine returned.
 */

const fx = duckdbFixture();

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'k', required: false, type: 'string' },
    { id: 3, name: 'region', required: false, type: 'string' },
  ],
};
const physicalNames = new Map<number, string>([[1, 'id'], [2, 'k'], [3, 'region']]);
const task = (files: ScanFile[], extra: Partial<ScanTask> = {}): ScanTask => ({ schema, resolution: 'field-id', physicalNames, files, ...extra });

async function write(name: string, select: string, fieldIds: string): Promise<string> {
  const path = join(fx.dir.path, name);
  await fx.session.run(`COPY (${select}) TO '${path}' (FORMAT parquet, FIELD_IDS ${fieldIds})`);
  return fileUri(path);
}

/** `n` rows: id = pos * 10 + file, k cycles through 'a', 'b', NULL. Region is left out of the file. */
const dataFile = (name: string, file: number, n: number) =>
  write(name, `SELECT i * 10 + ${file} AS id, CASE i % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' END AS k FROM range(${n}) t(i)`, '{id: 1, k: 2}');

const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('row-level deletes in the engine', () => {
  let f0: string;
  let f1: string;
  let f2: string;
  beforeAll(async () => {
    f0 = await dataFile('f0.parquet', 0, 20);
    f1 = await dataFile('f1.parquet', 1, 20);
    f2 = await dataFile('f2.parquet', 2, 20);
  });

  it('drops the positions of bitmaps, keeping file and row order', async () => {
    const rows = await readScan(fx.session, task([
      { path: f0, deletes: { positions: [{ kind: 'bitmap', bitmap: RoaringBitmap64.of([0, 1, 2, 7, 19]) }] } },
      { path: f1, deletes: { positions: [{ kind: 'bitmap', bitmap: RoaringBitmap64.of([]) }, { kind: 'bitmap', bitmap: RoaringBitmap64.of([5, 6]) }] } },
    ]));
    const want = [...range(20).filter((p) => ![0, 1, 2, 7, 19].includes(p)).map((p) => p * 10), ...range(20).filter((p) => p !== 5 && p !== 6).map((p) => p * 10 + 1)];
    expect(ids(rows)).toEqual(want);
  });

  it('reads position delete files, taking only the rows that name the data file (any file: spelling)', async () => {
    const local = f0.replace(/^file:\/\//, '');
    const del = await write(
      'pos.parquet',
      `SELECT * FROM (VALUES ('file:${local}', 3::BIGINT), ('file://${local}', 4), ('file:///elsewhere/f0.parquet', 5), (NULL, 6), ('${f1}', 8)) v(file_path, pos)`,
      '{file_path: 2147483546, pos: 2147483545}',
    );
    const rows = await readScan(fx.session, task([
      { path: f0, deletes: { positions: [{ kind: 'position-file', path: del, dataFile: f0 }] } },
      { path: f1 },
    ]));
    // f1's row 8 is listed, but the task does not apply the file to f1.
    expect(ids(rows)).toEqual([...range(20).filter((p) => p !== 3 && p !== 4).map((p) => p * 10), ...range(20).map((p) => p * 10 + 1)]);
  });

  it('matches equality deletes null-safely, on partition constants too, only for the files they apply to', async () => {
    const eqK = await write('eq-k.parquet', `SELECT * FROM (VALUES (NULL::VARCHAR)) v(k)`, '{k: 2}');
    const eqRegionK = await write('eq-rk.parquet', `SELECT * FROM (VALUES ('b', 'eu'), ('a', 'us')) v(k, region)`, '{k: 2, region: 3}');
    const rows = await readScan(fx.session, task([
      { path: f0, constants: new Map([[3, 'eu']]), deletes: { equality: [{ path: eqK, equalityIds: [2] }, { path: eqRegionK, equalityIds: [3, 2] }] } },
      { path: f1, constants: new Map([[3, 'us']]), deletes: { equality: [{ path: eqRegionK, equalityIds: [2, 3] }] } },
      { path: f2, constants: new Map([[3, 'eu']]) }, // same values as f0, no deletes apply: every row stays
    ]));
    const kOf = (p: number) => (p % 3 === 0 ? 'a' : p % 3 === 1 ? 'b' : null);
    const want = [
      ...range(20).filter((p) => kOf(p) === 'a').map((p) => p * 10), // f0: null and ('b', eu) deleted
      ...range(20).filter((p) => kOf(p) !== 'a').map((p) => p * 10 + 1), // f1: ('a', us) deleted
      ...range(20).map((p) => p * 10 + 2),
    ];
    expect(ids(rows)).toEqual(want);
  });

  it('applies positions and equality deletes together, and the filter and limit after them', async () => {
    const eqK = await write('eq-a.parquet', `SELECT 'a' AS k`, '{k: 2}');
    const t = task(
      [{ path: f0, deletes: { positions: [{ kind: 'bitmap', bitmap: RoaringBitmap64.of([1, 2]) }], equality: [{ path: eqK, equalityIds: [2] }] } }],
      { filterSql: '"id" < 100' },
    );
    expect(ids(await readScan(fx.session, t))).toEqual([40, 50, 70, 80]); // positions 4, 5, 7, 8
    expect(ids(await readScan(fx.session, t, { limit: 2 }))).toEqual([40, 50]);
    const out = join(fx.dir.path, 'out.json');
    await copyScanTo(fx.session, t, { format: 'json', path: out });
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l).id)).toEqual([40, 50, 70, 80]);
  });

  it('reads an equality column dropped from the schema as a hidden column', async () => {
    const narrow: Schema = { ...schema, fields: [schema.fields[0]!] };
    const eqK = await write('eq-b.parquet', `SELECT 'b' AS k`, '{k: 2}');
    const rows = await readScan(fx.session, {
      schema: narrow,
      resolution: 'field-id',
      physicalNames,
      hiddenFields: [schema.fields[1]!],
      files: [{ path: f0, deletes: { equality: [{ path: eqK, equalityIds: [2] }] } }],
    });
    expect(Object.keys(rows[0]!)).toEqual(['id']);
    expect(ids(rows)).toEqual(range(20).filter((p) => p % 3 !== 1).map((p) => p * 10));
  });

  it('loads vectors from Puffin blobs and Delta DV files, checking size, CRC and cardinality', async () => {
    const puffin = encodeDeletionVectorPuffin([
      { referencedDataFile: 'x', bitmap: RoaringBitmap64.of([0]) },
      { referencedDataFile: f1, bitmap: RoaringBitmap64.of([1, 3, 5]) },
    ]);
    const puffinPath = join(fx.dir.path, 'dv.puffin');
    writeFileSync(puffinPath, puffin.bytes);
    const delta = encodeDeletionVectorFile([RoaringBitmap64.of([10, 11, 12, 13])]);
    const dvPath = join(fx.dir.path, 'deletion_vector.bin');
    writeFileSync(dvPath, delta.bytes);
    const e = puffin.entries[1]!;
    const t = task([
      { path: f0, deletes: { positions: [{ kind: 'vector', path: fileUri(dvPath), offset: delta.entries[0]!.offset, length: delta.entries[0]!.sizeInBytes + 8, cardinality: 4 }] } },
      { path: f1, deletes: { positions: [{ kind: 'vector', path: fileUri(puffinPath), offset: e.contentOffset, length: e.contentSizeInBytes, cardinality: 3 }] } },
    ]);
    expect(() => scanRelationSql(t)).toThrow(/must be loaded first/);
    expect(ids(await readScan(fx.session, t))).toEqual([
      ...range(20).filter((p) => p < 10 || p > 13).map((p) => p * 10),
      ...range(20).filter((p) => ![1, 3, 5].includes(p)).map((p) => p * 10 + 1),
    ]);
    const loaded = await loadDeletionVectors(t);
    expect(loaded.files.every((f) => f.deletes!.positions!.every((p) => p.kind === 'bitmap'))).toBe(true);

    const wrongCount = task([{ path: f1, deletes: { positions: [{ kind: 'vector', path: fileUri(puffinPath), offset: e.contentOffset, length: e.contentSizeInBytes, cardinality: 2 }] } }]);
    const err = await readScan(fx.session, wrongCount).catch((x: unknown) => x);
    expect(isTwinlakeError(err, 'data-invalid') && (err as Error).message).toMatch(/expected cardinality 2, found 3/);
    const shifted = task([{ path: f1, deletes: { positions: [{ kind: 'vector', path: fileUri(puffinPath), offset: e.contentOffset + 1, length: e.contentSizeInBytes }] } }]);
    expect(isTwinlakeError(await readScan(fx.session, shifted).catch((x: unknown) => x), 'data-invalid')).toBe(true);
  });

  it('handles a million-row file with half its rows deleted at scattered positions', async () => {
    const big = await write('big.parquet', 'SELECT i AS id, NULL::VARCHAR AS k FROM range(1000000) t(i)', '{id: 1, k: 2}');
    // Every odd position, and every position divisible by 7: runs and singletons mixed.
    const bitmap = new RoaringBitmap64();
    for (let p = 0; p < 1_000_000; p++) if (p % 2 === 1 || p % 7 === 0) bitmap.add(p);
    const started = Date.now();
    const [row] = await fx.session.all(
      `SELECT count(*)::BIGINT AS n, sum(id)::HUGEINT::VARCHAR AS s FROM (${scanRelationSql(task([{ path: big, deletes: { positions: [{ kind: 'bitmap', bitmap }] } }]))})`,
    );
    let n = 0;
    let s = 0;
    for (let p = 0; p < 1_000_000; p++) {
      if (!(p % 2 === 1 || p % 7 === 0)) {
        n++;
        s += p;
      }
    }
    expect(Number(row!.n)).toBe(n);
    expect(row!.s).toBe(String(s));
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});
