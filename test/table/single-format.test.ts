import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TwinlakeError } from '../../src/index.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';
import { errorOf } from '../helpers.ts';

const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

describe('tables that keep one format', () => {
  const fx = lakehouseFixture();

  it('creates an empty Delta-only table: version 0 holds the schema, and writes follow it', async () => {
    const t = fx.lake.table('one.delta_empty');
    await t.create({ type: 'struct', fields: [{ id: 1, name: 'id', type: 'long', required: false }, { id: 2, name: 'name', type: 'string', required: false }] }, { formats: ['delta'] });
    const dir = join(fx.warehouse, 'one', 'delta_empty');
    expect(existsSync(join(dir, 'metadata'))).toBe(false);
    expect(readdirSync(join(dir, '_delta_log')).filter((f) => f.endsWith('.json'))).toEqual(['00000000000000000000.json']);
    const d = await t.describe();
    expect([d.formats, d.deltaVersion, d.records]).toEqual([['delta'], 0, 0]);
    expect(d.schema.fields.map((f) => [f.id, f.name, f.type])).toEqual([[1, 'id', 'long'], [2, 'name', 'string']]);
    expect(await t.read()).toEqual([]);
    expect((await t.append([{ id: 7, name: 'g' }])).deltaVersion).toBe(1);
    expect(ids(await t.read())).toEqual([7]);
    expect(await fx.lake.listTables()).toContain('one.delta_empty');
    expect((await errorOf(t.create({ type: 'struct', fields: [] }, { formats: ['delta'] }))).kind).toBe('already-exists');
  });

  it('a Delta-only table has no Iceberg metadata and the Delta log is the truth', async () => {
    const t = fx.lake.table('one.delta_only');
    const first = await t.append([{ id: 1, name: 'a' }], { formats: ['delta'] });
    expect(first.snapshotId).toBeUndefined();
    expect(first.deltaVersion).toBe(0);
    const second = await t.append([{ id: 2, name: 'b', extra: 1.5 }]);
    expect(second.deltaVersion).toBe(1);
    const dir = join(fx.warehouse, 'one', 'delta_only');
    expect(existsSync(join(dir, 'metadata'))).toBe(false);
    expect(readdirSync(join(dir, '_delta_log')).filter((f) => f.endsWith('.json'))).toHaveLength(2);

    const rows = await t.read();
    expect(ids(rows)).toEqual([1, 2]);
    expect(rows.find((r) => Number(r.id) === 1)!.extra).toBeNull();
    expect(ids(await t.read({ version: 0 }))).toEqual([1]);
    expect(ids(await fx.lake.readPath(dir))).toEqual([1, 2]);
    await expect(t.read({ format: 'iceberg' })).rejects.toThrow(/only the Delta format/);

    const over = await t.overwrite([{ id: 3, name: 'c' }]);
    expect(over.deltaVersion).toBe(2);
    expect(ids(await t.read())).toEqual([3]);
    expect(ids(await t.read({ version: 1 }))).toEqual([1, 2]);

    const d = await t.describe();
    expect(d.formats).toEqual(['delta']);
    expect(d.deltaVersion).toBe(2);
    expect(d.records).toBe(1);
    expect(d.schema.fields.map((f) => [f.id, f.name])).toEqual([[1, 'id'], [2, 'name'], [3, 'extra']]);
    const h = await t.history();
    expect(h.map((e) => e.deltaVersion)).toEqual([2, 1, 0]);
    expect(await fx.lake.listTables()).toContain('one.delta_only');
  });

  it('a write asking a Delta-only table for Iceberg too says that is not supported, not to alter', async () => {
    const t = fx.lake.table('single.delta_more');
    await t.append([{ id: 1 }], { formats: ['delta'] });
    const e = await errorOf(t.append([{ id: 2 }], { formats: ['delta', 'iceberg'] }));
    expect(e.message).toBe('table single.delta_more: keeps delta only, and this write asks for formats delta,iceberg; adding Iceberg to a Delta-only table is not supported');
    expect(await t.count()).toBe(1);
  });

  it('a Delta-only table checkpoints every 10 versions', async () => {
    const t = fx.lake.table('one.delta_cp');
    for (let i = 0; i < 11; i++) await t.append([{ id: i }], { formats: ['delta'] });
    const log = join(fx.warehouse, 'one', 'delta_cp', '_delta_log');
    expect(existsSync(join(log, `${String(10).padStart(20, '0')}.checkpoint.parquet`))).toBe(true);
    expect(ids(await t.read())).toEqual(Array.from({ length: 11 }, (_, i) => i));
  });

  it('an Iceberg-only table writes no Delta log', async () => {
    const t = fx.lake.table('one.iceberg_only');
    const r = await t.append([{ id: 1 }], { formats: ['iceberg'] });
    expect(r.deltaVersion).toBeUndefined();
    await t.append([{ id: 2 }]);
    expect(existsSync(join(fx.warehouse, 'one', 'iceberg_only', '_delta_log'))).toBe(false);
    expect(ids(await t.read())).toEqual([1, 2]);
    const err = await t.read({ format: 'delta' }).catch((e) => e);
    expect(err).toBeInstanceOf(TwinlakeError);
    expect(err.message).toMatch(/only the Iceberg format/);
  });
});
