import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommit } from '../../src/format/delta/actions.ts';
import { errorOf, listFiles } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

function deltaCommit(dir: string, version: number) {
  return parseCommit(readFileSync(join(dir, '_delta_log', `${String(version).padStart(20, '0')}.json`), 'utf8'), `version ${version}`);
}

describe('alter: table properties and formats after creation', () => {
  const fx = lakehouseFixture();

  it('sets and unsets properties with a metadata commit, checked like at creation', async () => {
    const t = fx.lake.table('alt.props');
    await t.append([{ id: 1 }, { id: 2 }]);
    const r = await t.alter({ set: { 'write.merge.mode': 'merge-on-read', 'write.delete.mode': 'merge-on-read' } });
    expect(r.changed).toEqual(['write.delete.mode', 'write.merge.mode']);
    expect(r.snapshotId).toBeUndefined(); // nothing Delta mirrors: no snapshot
    expect((await t.metadata()).properties['write.merge.mode']).toBe('merge-on-read');
    // The new default applies: a delete now writes a delete file instead of rewriting.
    const d = await t.delete('id = 1');
    expect(d.strategy).toBe('merge-on-read');
    expect(d.deleteFiles).toBe(1);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([2]);

    const before = listFiles(join(fx.warehouse, 'alt', 'props'));
    const bad = await errorOf(t.alter({ set: { 'write.merge.mode': 'lazy' } }));
    expect(bad.message).toMatch(/write\.merge\.mode: expected copy-on-write or merge-on-read, found "lazy"/);
    expect((await errorOf(t.alter({ set: { 'commit.retry.num-retries': '-1' } }))).message).toMatch(/expected a positive number/);
    expect((await errorOf(t.alter({ set: { 'twinlake.formats': 'iceberg' } }))).message).toMatch(/changed with formats/);
    expect((await errorOf(t.alter({ set: { 'format-version': '3' } }))).message).toMatch(/chosen when the table is created/);
    expect(listFiles(join(fx.warehouse, 'alt', 'props'))).toEqual(before);

    const u = await t.alter({ unset: ['write.merge.mode', 'write.delete.mode'] });
    expect(u.changed).toEqual(['write.delete.mode', 'write.merge.mode']);
    expect((await t.metadata()).properties['write.merge.mode']).toBeUndefined();
    expect((await t.delete('id = 2')).strategy).toBe('copy-on-write');
    expect((await t.alter({ unset: ['write.merge.mode'] })).changed).toEqual([]);
  });

  it('a write giving other properties or formats to an existing table is refused and points to alter', async () => {
    const t = fx.lake.table('alt.writeopts');
    await t.append([{ id: 1 }], { properties: { 'write.merge.mode': 'merge-on-read' } });
    const before = listFiles(join(fx.warehouse, 'alt', 'writeopts'));
    const e = await errorOf(t.append([{ id: 2 }], { properties: { 'write.merge.mode': 'copy-on-write' } }));
    expect(e.message).toMatch(/property write\.merge\.mode is "merge-on-read", and this write gives "copy-on-write"/);
    expect(e.message).toMatch(/twinlake alter alt\.writeopts --property write\.merge\.mode=copy-on-write/);
    expect((await errorOf(t.append([{ id: 2 }], { formats: ['iceberg'] }))).message).toMatch(/twinlake alter alt\.writeopts --formats iceberg/);
    expect((await errorOf(t.merge([{ id: 2 }], { keys: ['id'], properties: { 'write.target-file-size-bytes': '1000' } }))).message).toMatch(/is not set.*alter/);
    expect(listFiles(join(fx.warehouse, 'alt', 'writeopts'))).toEqual(before);
    // The same values again are fine: one command both creates and appends.
    await t.append([{ id: 2 }], { properties: { 'write.merge.mode': 'merge-on-read', 'format-version': '3' }, formats: ['delta', 'iceberg'] });
    expect(ids(await t.read())).toEqual([1, 2]);
  });

  it('a property Delta mirrors reaches the Delta log of a table with no snapshot yet', async () => {
    const t = fx.lake.table('alt.mirroredempty');
    await t.create({ type: 'struct', fields: [{ id: 1, name: 'id', required: false, type: 'long' }] });
    const r = await t.alter({ set: { 'delta.checkpointInterval': '2' } });
    expect(r.deltaVersion).toBe(1);
    const dir = join(fx.warehouse, 'alt', 'mirroredempty');
    const meta = deltaCommit(dir, 1).find((a) => 'metaData' in a) as { metaData: { configuration: Record<string, string> } };
    expect(meta.metaData.configuration['delta.checkpointInterval']).toBe('2');
    for (const id of [1, 2, 3]) await t.append([{ id }]);
    // Every later version carries the new interval, and the checkpoint comes at 2, not 10.
    for (let v = 2; v <= 4; v++) {
      const m = deltaCommit(dir, v).find((a) => 'metaData' in a) as { metaData: { configuration: Record<string, string> } } | undefined;
      if (m) expect(m.metaData.configuration['delta.checkpointInterval']).toBe('2');
    }
    expect(existsSync(join(dir, '_delta_log', `${String(2).padStart(20, '0')}.checkpoint.parquet`))).toBe(true);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2, 3]);
    expect(ids(await t.read())).toEqual([1, 2, 3]);
  });

  it('a property Delta mirrors reaches the Delta log in a version of its own', async () => {
    const t = fx.lake.table('alt.mirrored');
    await t.append([{ id: 1 }]);
    const r = await t.alter({ set: { 'delta.checkpointInterval': '3' } });
    expect(r.deltaVersion).toBe(2);
    const dir = join(fx.warehouse, 'alt', 'mirrored');
    const actions = deltaCommit(dir, 2);
    const info = actions.find((a) => 'commitInfo' in a) as { commitInfo: { operation: string; operationParameters: Record<string, string> } };
    expect(info.commitInfo.operation).toBe('SET TBLPROPERTIES');
    expect(JSON.parse(info.commitInfo.operationParameters.properties!)).toEqual({ 'delta.checkpointInterval': '3' });
    const meta = actions.find((a) => 'metaData' in a) as { metaData: { configuration: Record<string, string> } };
    expect(meta.metaData.configuration['delta.checkpointInterval']).toBe('3');
    expect(actions.some((a) => 'add' in a || 'remove' in a)).toBe(false);
    // Version 3 is the next write: a checkpoint at 3 now, not at 10.
    await t.append([{ id: 2 }]);
    expect(existsSync(join(dir, '_delta_log', `${String(3).padStart(20, '0')}.checkpoint.parquet`))).toBe(true);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2]);
    expect((await t.history())[1]!.change).toBe('alter');
    expect((await errorOf(t.alter({ set: { 'delta.appendOnly': 'true' } }))).message).toMatch(/not one it mirrors/);
  });

  it('adding Delta to an Iceberg-only table writes a Delta log of the current state', async () => {
    const t = fx.lake.table('alt.adddelta');
    await t.append([{ id: 1, s: 'a' }, { id: 2, s: 'b' }], { formats: ['iceberg'], partition: 's' });
    await t.append([{ id: 3, s: 'a' }]);
    await t.overwrite([{ id: 4, s: 'b' }, { id: 5, s: 'c' }]);
    await t.append([{ id: 6, s: 'a' }]);
    const dir = join(fx.warehouse, 'alt', 'adddelta');
    expect(existsSync(join(dir, '_delta_log'))).toBe(false);
    const r = await t.alter({ formats: ['iceberg', 'delta'] });
    expect(r.formats).toEqual(['delta', 'iceberg']);
    expect(r.deltaVersion).toBe(0);
    expect(readdirSync(join(dir, '_delta_log')).filter((f) => f.endsWith('.json'))).toHaveLength(1);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([4, 5, 6]);
    expect(ids(await fx.lake.readPath(dir, { format: 'delta' }))).toEqual([4, 5, 6]);
    const info = deltaCommit(dir, 0).find((a) => 'commitInfo' in a) as { commitInfo: { operation: string } };
    expect(info.commitInfo.operation).toBe('CONVERT');
    // Later writes continue the Delta log.
    const w = await t.append([{ id: 7, s: 'c' }]);
    expect(w.deltaVersion).toBe(1);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([4, 5, 6, 7]);
    expect(ids(await t.read({ format: 'delta', version: 0 }))).toEqual([4, 5, 6]);
    const rows = await t.read({ format: 'delta', where: "s = 'a'" });
    expect(ids(rows)).toEqual([6]);
  });

  it('dropping Delta stops writing it; tables with deletes or an old log cannot add Delta', async () => {
    const t = fx.lake.table('alt.dropdelta');
    await t.append([{ id: 1 }]);
    const dir = join(fx.warehouse, 'alt', 'dropdelta');
    const r = await t.alter({ formats: ['iceberg'] });
    expect(r.formats).toEqual(['iceberg']);
    expect(r.warnings.join()).toMatch(/no longer written/);
    const logBefore = readdirSync(join(dir, '_delta_log'));
    const w = await t.append([{ id: 2 }]);
    expect(w.deltaVersion).toBeUndefined();
    expect(readdirSync(join(dir, '_delta_log'))).toEqual(logBefore);
    await expect(t.read({ format: 'delta' })).rejects.toThrow(/only the Iceberg format/);
    expect((await errorOf(t.alter({ formats: ['iceberg', 'delta'] }))).message).toMatch(/Delta log from before/);
    expect((await errorOf(t.alter({ formats: ['delta'] }))).message).toMatch(/dropping Iceberg/);

    const mor = fx.lake.table('alt.mor');
    await mor.append([{ id: 1 }, { id: 2 }], { formats: ['iceberg'], properties: { 'write.delete.mode': 'merge-on-read' } });
    await mor.delete('id = 1');
    expect((await errorOf(mor.alter({ formats: ['iceberg', 'delta'] }))).message).toMatch(/row-level deletes/);
    expect(existsSync(join(fx.warehouse, 'alt', 'mor', '_delta_log'))).toBe(false);
  });

  it('alters a Delta-only table in a Delta version with the new configuration', async () => {
    const t = fx.lake.table('alt.deltaonly');
    await t.append([{ id: 1 }], { formats: ['delta'] });
    const r = await t.alter({ set: { 'delta.checkpointInterval': '2' } });
    expect(r.deltaVersion).toBe(1);
    expect((await t.describe()).properties['delta.checkpointInterval']).toBe('2');
    await t.append([{ id: 2 }]);
    expect(existsSync(join(fx.warehouse, 'alt', 'deltaonly', '_delta_log', `${String(2).padStart(20, '0')}.checkpoint.parquet`))).toBe(true);
    expect(ids(await t.read())).toEqual([1, 2]);
  });
});
