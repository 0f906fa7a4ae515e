import { describe, expect, it } from 'vitest';
import { compact, DELETE_RATIO_THRESHOLD, MIN_FILE_SIZE_RATIO } from '../../src/maintenance/compact.ts';
import type { Table } from '../../src/index.ts';
import { expectBothEqual, ids } from '../both-formats.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

/**
 * Compaction's defaults against Iceberg's rewrite_data_files options (the comment above
 * DEFAULT_MIN_INPUT_FILES in src/maintenance/compact.ts): two small files of a partition are
 * enough (Iceberg waits for 5), a file at 75% of the target or more is left alone
 * (min-file-size-bytes), and such a file is rewritten for its deletes only once they remove 30%
 * of its rows (delete-ratio-threshold).
 */

const range = (lo: number, n: number) => Array.from({ length: n }, (_, i) => lo + i);

describe('compaction defaults', () => {
  const fx = lakehouseFixture();

  it('a partition with 3 small files is compacted into one; a partition with one file is left alone', async () => {
    const t = fx.lake.table('cd.three');
    for (let b = 0; b < 3; b++) await t.append(range(b * 10, 2).map((id) => ({ id, grp: 'a' })), { partition: 'grp' });
    await t.append([{ id: 100, grp: 'b' }]);
    const r = await compact(t);
    expect(r).toMatchObject({ filesBefore: 4, groups: 1, filesRewritten: 3, filesAdded: 1, filesAfter: 2 });
    expect((await t.plan({ where: "grp = 'a'" })).task.files).toHaveLength(1);
    await expectBothEqual(t, [0, 1, 10, 11, 20, 21, 100]);
  });

  /** One file of `rows` rows (the large one) and two of 2 rows, all in partition a; the large file's bytes. */
  async function largeAndSmall(t: Table, rows: number, properties: Record<string, string> = {}): Promise<number> {
    await t.append(range(0, rows).map((id) => ({ id, grp: 'a', s: `value ${id * 7919}` })), { partition: 'grp', properties });
    const large = (await t.files()).files[0]!.bytes;
    await t.append([{ id: 10_000, grp: 'a', s: 'x' }, { id: 10_001, grp: 'a', s: 'y' }]);
    await t.append([{ id: 10_002, grp: 'a', s: 'x' }, { id: 10_003, grp: 'a', s: 'y' }]);
    return large;
  }

  it('a file at 75% of the target or more is left alone; the small files beside it are packed', async () => {
    const t = fx.lake.table('cd.near');
    const large = await largeAndSmall(t, 3000);
    const files = (await t.files()).files;
    const largePath = files.find((f) => f.bytes === large)!.path;
    // The large file is 80% of the target; all three together fit in one target-sized file, so
    // rewriting them all would also have made one file.
    const target = Math.ceil(large / 0.8);
    expect(large).toBeGreaterThanOrEqual(MIN_FILE_SIZE_RATIO * target);
    expect(files.reduce((a, f) => a + f.bytes, 0)).toBeLessThanOrEqual(target);
    const r = await compact(t, { targetFileSize: target });
    expect(r).toMatchObject({ filesBefore: 3, filesRewritten: 2, filesAdded: 1, filesAfter: 2 });
    const after = (await t.files()).files.map((f) => f.path);
    expect(after).toContain(largePath);
    await expectBothEqual(t, [...range(0, 3000), 10_000, 10_001, 10_002, 10_003]);
  });

  it.each(['2', '3'])('a file near the target is rewritten for its deletes only once they remove 30 percent of its rows (v%s)', async (version) => {
    const t = fx.lake.table(`cd.deletes_v${version}`);
    const rows = 3000;
    const large = await largeAndSmall(t, rows, { 'format-version': version, 'write.delete.mode': 'merge-on-read' });
    const target = Math.ceil(large / 0.8);
    // Pack the two small files first: then the large file is the only one in question.
    expect(await compact(t, { targetFileSize: target })).toMatchObject({ filesRewritten: 2, filesAfter: 2 });
    const largePath = (await t.files()).files.find((f) => f.bytes === large)!.path;

    await t.delete('id < 10');
    const light = await compact(t, { targetFileSize: target });
    expect(light).toMatchObject({ groups: 0, filesRewritten: 0, deletedRowsRemoved: 0 });
    expect((await t.files()).files.find((f) => f.path === largePath)!.deletes).toHaveLength(1);

    // 10 + 890 deleted of 3000: exactly the threshold.
    await t.delete(`id >= 10 AND id < ${DELETE_RATIO_THRESHOLD * rows}`);
    // Rewritten, with the small file of its partition: the live rows fit one file.
    const heavy = await compact(t, { targetFileSize: target });
    expect(heavy).toMatchObject({ filesRewritten: 2, filesAdded: 1, filesAfter: 1, deletedRowsRemoved: DELETE_RATIO_THRESHOLD * rows, deleteFilesRemoved: 1 });
    const live = (await t.files()).files;
    expect(live.map((f) => f.path)).not.toContain(largePath);
    expect(live.every((f) => f.deletes.length === 0)).toBe(true);
    const expected = [...range(DELETE_RATIO_THRESHOLD * rows, rows - DELETE_RATIO_THRESHOLD * rows), 10_000, 10_001, 10_002, 10_003];
    expect(ids(await t.read({ format: 'delta' }))).toEqual(expected);
    await expectBothEqual(t, expected);
  });
});
