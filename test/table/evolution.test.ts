import { describe, expect, it } from 'vitest';
import { TwinlakeError } from '../../src/index.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

const byId = (rows: Record<string, unknown>[]) => [...rows].sort((a, b) => Number(a.id) - Number(b.id));

describe('schema evolution', () => {
  const fx = lakehouseFixture();

  it('adds a column with a new field ID in both formats; old rows read as null', async () => {
    const t = fx.lake.table('evo.add');
    const first = await t.append([{ id: 1, name: 'a' }]);
    const second = await t.append([{ id: 2, name: 'b', score: 9.5 }]);
    const schema = await t.schema();
    expect(schema.fields.map((f) => [f.id, f.name])).toEqual([
      [1, 'id'],
      [2, 'name'],
      [3, 'score'],
    ]);
    for (const format of ['iceberg', 'delta'] as const) {
      const rows = byId(await t.read({ format }));
      expect(rows.map((r) => [Number(r.id), r.name, r.score])).toEqual([
        [1, 'a', null],
        [2, 'b', 9.5],
      ]);
    }
    // The old version reads with its old schema in both formats.
    const oldIceberg = await t.read({ snapshotId: first.snapshotId });
    const oldDelta = await t.read({ format: 'delta', version: first.deltaVersion });
    expect(Object.keys(oldIceberg[0]!).sort()).toEqual(['id', 'name']);
    expect(Object.keys(oldDelta[0]!).sort()).toEqual(['id', 'name']);
    expect(second.deltaVersion).toBe(first.deltaVersion! + 1);
  });

  it('widens int to long and keeps reading the old files', async () => {
    const t = fx.lake.table('evo.widen');
    const intSchema = { type: 'struct' as const, fields: [{ id: 0, name: 'id', required: false, type: 'int' }, { id: 0, name: 'n', required: false, type: 'int' }] };
    const first = await t.append([{ id: 1, n: 7 }], { schema: intSchema });
    expect((await t.schema()).fields.map((f) => f.type)).toEqual(['int', 'int']);
    // JSON integers are inferred as long; the values decide: 2 still fits the int column.
    const widened = await t.append([{ id: 2, n: 5_000_000_000 }]);
    expect((await t.schema()).fields.map((f) => f.type)).toEqual(['int', 'long']);
    expect(widened.schemaChanges).toEqual([{ change: 'widened', column: 'n', from: 'int', to: 'long' }]);
    for (const format of ['iceberg', 'delta'] as const) {
      const rows = byId(await t.read({ format }));
      expect(rows.map((r) => [Number(r.id), Number(r.n)])).toEqual([
        [1, 7],
        [2, 5_000_000_000],
      ]);
    }
    const old = await t.read({ format: 'delta', version: first.deltaVersion });
    expect(old.map((r) => Number(r.n))).toEqual([7]);
  });

  it('whether an int column widens does not depend on where the wide value sits in the input', async () => {
    const intSchema = { type: 'struct' as const, fields: [{ id: 0, name: 'n', required: false, type: 'int' }] };
    const small = Array.from({ length: 30_000 }, (_, i) => ({ n: i }));
    for (const [name, rows] of [
      ['evo.wide_last', [...small, { n: 5_000_000_000 }]],
      ['evo.wide_first', [{ n: 5_000_000_000 }, ...small]],
    ] as const) {
      const t = fx.lake.table(name);
      await t.create(intSchema);
      const r = await t.append([...rows]);
      expect(r.schemaChanges).toEqual([{ change: 'widened', column: 'n', from: 'int', to: 'long' }]);
      expect(await t.count()).toBe(30_001);
    }
  });

  it('JSON numbers that fit an int or float column keep its type, at every depth', async () => {
    const t = fx.lake.table('evo.narrow');
    const struct = (fields: [string, string][]) => ({ type: 'struct' as const, fields: fields.map(([name, type]) => ({ id: 0, name, required: false, type })) });
    await t.create({
      ...struct([['i', 'int'], ['f', 'float']]),
      fields: [...struct([['i', 'int'], ['f', 'float']]).fields, { id: 0, name: 'o', required: false, type: struct([['i', 'int'], ['f', 'float']]) }],
    });
    const r = await t.append([{ i: -2147483648, f: 0.1, o: { i: 2147483647, f: -3.4e38 } }]);
    expect(r.schemaChanges).toEqual([]);
    expect((await t.schema()).fields.map((f) => typeof f.type === 'string' ? f.type : 'struct')).toEqual(['int', 'float', 'struct']);
    const rows = await t.read({ format: 'delta' });
    expect(rows.map((x: any) => [x.i, Math.fround(0.1) === x.f, x.o.i])).toEqual([[-2147483648, true, 2147483647]]);
    // A value beyond the type widens it, nested too.
    const w = await t.append([{ i: 1, f: 1, o: { i: 2147483648, f: 1e39 } }]);
    expect(w.schemaChanges).toEqual([
      { change: 'widened', column: 'o.i', from: 'int', to: 'long' },
      { change: 'widened', column: 'o.f', from: 'float', to: 'double' },
    ]);
    expect(await t.count()).toBe(2);
    // Declared float, a value beyond its range: refused, not stored as infinity.
    const floatSchema = struct([['f', 'float']]);
    const err = await t.append([{ f: 1e39 }], { schema: floatSchema }).catch((e) => e);
    expect(err.message).toMatch(/column "f".*expected float, found "1e\+?39"/);
  });

  it('writes a missing optional column as null', async () => {
    const t = fx.lake.table('evo.missing');
    await t.append([{ id: 1, a: 'x', b: 'y' }]);
    await t.append([{ id: 2, a: 'z' }]);
    const rows = byId(await t.read({ format: 'delta' }));
    expect(rows.map((r) => r.b)).toEqual(['y', null]);
  });

  it('refuses an incompatible type and commits nothing', async () => {
    const t = fx.lake.table('evo.incompatible');
    const r = await t.append([{ id: 1, tag: 'x' }]);
    const err = await t.append([{ id: 2, tag: { nested: true } }]).catch((e) => e);
    expect(err).toBeInstanceOf(TwinlakeError);
    expect(err.message).toMatch(/tag/);
    expect(err.message).toMatch(/string/);
    const d = await t.describe();
    expect(d.currentSnapshotId).toBe(r.snapshotId);
    expect(d.deltaVersion).toBe(r.deltaVersion);
  });

  it('with evolution off, any difference is an error', async () => {
    const t = fx.lake.table('evo.strict');
    await t.append([{ id: 1 }], { properties: { 'twinlake.schema-evolution.enabled': 'false' } });
    const err = await t.append([{ id: 2, extra: 'x' }]).catch((e) => e);
    expect(err).toBeInstanceOf(TwinlakeError);
    expect(err.message).toMatch(/extra/);
    expect(await t.read()).toHaveLength(1);
  });
});
