import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { compact, type CompactOptions } from '../../src/maintenance/compact.ts';
import type { Table } from '../../src/index.ts';
import { expectBothEqual, ids } from '../both-formats.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';
import { errorOf } from '../helpers.ts';

const ROWS = 40_000;
const FILES = 200;
// Every small file holds 200 consecutive rows: all values of x and of y, so no filter on them skips any.
const X = (i: number) => (i * 7919) % 100;
const Y = (i: number) => (i * 104_729 + 13) % 97;

async function scattered(t: Table, dir: string): Promise<void> {
  await t.create({
    type: 'struct',
    fields: [
      { id: 1, name: 'id', required: false, type: 'long' },
      { id: 2, name: 'x', required: false, type: 'int' },
      { id: 3, name: 'y', required: false, type: 'long' },
    ],
  });
  mkdirSync(join(dir, 'imported'), { recursive: true });
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    await conn.run(
      `COPY (SELECT i::BIGINT AS id, ((i * 7919) % 100)::INTEGER AS x, ((i * 104729 + 13) % 97)::BIGINT AS y, i // ${ROWS / FILES} AS f FROM range(${ROWS}) t(i)) ` +
        `TO '${join(dir, 'imported')}' (FORMAT parquet, PARTITION_BY (f), FIELD_IDS {id: 1, x: 2, y: 3})`,
    );
  } finally {
    conn.closeSync();
  }
  await t.addFiles([join(dir, 'imported', '**', '*.parquet')]);
}

const TWO_COLUMNS = 'x < 20 AND y < 20';
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const matching = (pred: (i: number) => boolean) => range(ROWS).filter(pred);
const scannedFor = async (t: Table, where: string) => {
  const e = (await t.plan({ where })).task.explain!;
  return { files: e.files, scanned: e.files - e.filesSkipped };
};

describe('compaction with Z-order and sort: the layout that lets filters skip files', () => {
  const fx = lakehouseFixture();
  const target = 8 * 1024;

  async function compacted(name: string, opts: CompactOptions) {
    const t = fx.lake.table(`zo.${name}`);
    await scattered(t, join(fx.warehouse, 'zo', name));
    const r = await compact(t, { targetFileSize: target, explainFilter: TWO_COLUMNS, ...opts });
    return { t, r };
  }

  it('Z-order on two columns makes a filter on both, and on each, scan far fewer files than bin-packing alone', async () => {
    const z = await compacted('z', { zorder: ['x', 'y'] });
    const plain = await compacted('plain', {});
    for (const { r } of [z, plain]) {
      expect(r.filesBefore).toBe(FILES);
      // Before: every small file spans both columns, so the filter skips none.
      expect(r.pruning!.before).toEqual({ files: FILES, scanned: FILES });
    }
    expect(z.r.filesAfter).toBeGreaterThanOrEqual(8);
    expect(plain.r.filesAfter).toBeGreaterThanOrEqual(8);
    const files = z.r.filesAfter;
    // Bin-packing alone keeps rows in arrival order: still every file spans both columns.
    expect(plain.r.pruning!.after).toEqual({ files: plain.r.filesAfter, scanned: plain.r.filesAfter });
    // Z-order: the rows of x < 20 AND y < 20 sit in a few files.
    const zAfter = z.r.pruning!.after;
    expect(zAfter.files).toBe(files);
    expect(zAfter.scanned).toBeLessThanOrEqual(files / 4);
    expect(zAfter.scanned).toBeGreaterThan(0);
    // ... and each column alone prunes too, which a sort on one column cannot give the other.
    for (const where of ['x < 20', 'y < 20']) expect((await scannedFor(z.t, where)).scanned).toBeLessThan(files);
    // The same rows, and filters still find exactly theirs.
    await expectBothEqual(z.t, range(ROWS));
    expect(ids(await z.t.read({ where: TWO_COLUMNS }))).toEqual(matching((i) => X(i) < 20 && Y(i) < 20));
    expect(ids(await z.t.read({ where: TWO_COLUMNS, format: 'delta' }))).toEqual(matching((i) => X(i) < 20 && Y(i) < 20));
    // Delta prunes on the rewritten files' stats as Iceberg does.
    expect((await z.t.plan({ where: TWO_COLUMNS, format: 'delta' })).task.files).toHaveLength(zAfter.scanned);
  }, 60_000);

  it('a sort on x prunes a filter on x, not one on y alone', async () => {
    const s = await compacted('sorted', { sort: ['x'] });
    const files = s.r.filesAfter;
    expect(files).toBeGreaterThanOrEqual(4);
    expect((await scannedFor(s.t, 'x < 20')).scanned).toBeLessThanOrEqual(files / 2);
    expect((await scannedFor(s.t, 'y < 20')).scanned).toBe(files);
    expect(s.r.pruning!.after.scanned).toBeLessThan(s.r.pruning!.before.scanned);
    await expectBothEqual(s.t, range(ROWS));
    expect(ids(await s.t.read({ where: 'x = 7', format: 'delta' }))).toEqual(matching((i) => X(i) === 7));
  }, 60_000);

  it('refuses columns Z-order cannot encode, or that do not exist, before writing anything', async () => {
    const t = fx.lake.table('zo.bad');
    await t.append([{ id: 1, d: 1.5, flag: true }]);
    expect((await errorOf(compact(t, { zorder: ['id', 'd'] }))).message).toBe(
      'compact: zorder column d has the type double; Z-order encodes int, long, date, timestamp, timestamptz and string columns',
    );
    expect((await errorOf(compact(t, { zorder: ['nope'] }))).message).toBe('compact: column nope is not in table zo.bad (columns: id, d, flag)');
    expect((await errorOf(compact(t, { zorder: ['id'], sort: ['id'] }))).message).toBe('compact: give sort or zorder, not both');
    expect((await errorOf(compact(t, { targetFileSize: 0 }))).message).toBe('compact: targetFileSize must be a positive whole number of bytes, got 0');
  });
});
