import { describe, expect, it } from 'vitest';
import { currentSnapshot } from '../../src/format/iceberg/table-metadata.ts';
import { compact } from '../../src/maintenance/compact.ts';
import { Lakehouse, type Table } from '../../src/index.ts';
import { contended, expectBothEqual, ids } from '../both-formats.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

const range = (lo: number, hi: number) => Array.from({ length: hi - lo }, (_, i) => lo + i);

describe('compaction racing other writers', () => {
  const fx = lakehouseFixture();

  /** Compacts `name` through a catalog where `rival` commits just before compaction's first commit attempt. */
  async function compactRacing(name: string, rival: (t: Table) => Promise<unknown>) {
    const shared = await Lakehouse.open({ warehouse: fx.warehouse });
    const catalog = contended(shared.catalog, async () => void (await rival(fx.lake.table(name))), 1);
    const lake = await Lakehouse.open({ warehouse: fx.warehouse, catalog });
    try {
      return { r: await compact(lake.table(name)), commits: catalog.commits };
    } finally {
      await Promise.all([lake.close(), shared.close()]);
    }
  }

  /** 8 small files: 4 appends of 10 rows in each of two partitions (eu: ids below 100, us: 100 and up). */
  async function twoPartitions(name: string, properties: Record<string, string> = {}): Promise<Table> {
    const t = fx.lake.table(name);
    for (let b = 0; b < 4; b++) {
      const rows = [...range(b * 10, b * 10 + 10).map((id) => ({ id, region: 'eu' })), ...range(100 + b * 10, 110 + b * 10).map((id) => ({ id, region: 'us' }))];
      await t.append(rows, { partition: 'region', properties });
    }
    expect((await t.files()).files).toHaveLength(8);
    return t;
  }

  it('an append committed meanwhile is kept: compaction rebases onto it and the rows appear once', async () => {
    const t = fx.lake.table('race.append');
    for (let b = 0; b < 6; b++) await t.append(range(b * 10, b * 10 + 10).map((id) => ({ id })));
    let appended: bigint | undefined;
    const { r, commits } = await compactRacing('race.append', async (rival) => {
      appended = (await rival.append(range(1000, 1005).map((id) => ({ id })))).snapshotId;
    });
    // The lost swap was retried on the new base, not prepared again: nothing skipped.
    expect(commits).toBe(2);
    expect(r).toMatchObject({ filesRewritten: 6, filesAdded: 1, groupsSkipped: 0, groupsRewritten: 1 });
    const snapshot = currentSnapshot(await t.metadata())!;
    expect(snapshot['snapshot-id']).toBe(r.snapshotId);
    expect(snapshot['parent-snapshot-id']).toBe(appended);
    await expectBothEqual(t, [...range(0, 60), ...range(1000, 1005)]);
    // The appended file was not part of the compaction: it is live beside the compacted one.
    expect((await t.files()).files).toHaveLength(2);
    expect((await t.verify({ allVersions: true })).findings).toEqual([]);
  });

  it.each(['copy-on-write', 'merge-on-read'])('a %s delete committed meanwhile on a group\'s files makes that group skip, the delete kept; the other partition compacts', async (mode) => {
    const name = `race.del${mode === 'copy-on-write' ? 'cow' : 'mor'}`;
    const t = await twoPartitions(name, { 'write.delete.mode': mode });
    const { r } = await compactRacing(name, (rival) => rival.delete('id = 15'));
    expect(r).toMatchObject({ groups: 2, groupsSkipped: 1, groupsRewritten: 1, filesRewritten: 4, filesAdded: 1 });
    const expected = [...range(0, 40), ...range(100, 140)].filter((id) => id !== 15);
    expect(ids(await t.read())).toEqual(expected);
    expect(ids(await t.read({ format: 'delta' }))).toEqual(expected);
    // eu: the files the delete left (untouched by compaction); us: one compacted file.
    expect((await t.files()).files).toHaveLength(5);
    expect((await t.plan({ where: "region = 'eu'" })).task.files).toHaveLength(4);
    expect((await t.read({ where: "region = 'us'" })).length).toBe(40);
    expect((await t.plan({ where: "region = 'us'" })).task.files).toHaveLength(1);
    expect((await t.verify({ allVersions: true })).findings).toEqual([]);
  });
});
