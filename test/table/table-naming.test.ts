import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorOf, listFiles } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

describe('table names: folders never nest, names compare in NFC', () => {
  const fx = lakehouseFixture();

  it('refuses a table whose folder would lie inside another table\'s', async () => {
    await fx.lake.table('ns.t').append([{ id: 1 }]);
    const before = listFiles(fx.warehouse);
    for (const name of ['ns.t.data', 'ns.t._delta_log', 'ns.t.metadata', 'ns.t.x.y']) {
      const e = await errorOf(fx.lake.table(name).append([{ id: 2 }]));
      expect(e.kind).toBe('invalid-input');
      expect(e.message).toMatch(new RegExp(`table ${name.replace(/\./g, '\\.')}: its folder would lie inside the folder of table ns\\.t`));
    }
    const schema = { type: 'struct' as const, fields: [{ id: 1, name: 'id', required: false, type: 'long' as const }] };
    expect((await errorOf(fx.lake.table('ns.t.metadata').create(schema))).message).toMatch(/inside the folder of table ns\.t/);
    expect((await errorOf(fx.lake.table('ns.t.data').merge([{ id: 1 }], { keys: ['id'] }))).message).toMatch(/inside the folder of table ns\.t/);
    expect((await errorOf(fx.lake.table('ns.t.d').append([{ id: 1 }], { formats: ['delta'] }))).message).toMatch(/inside the folder of table ns\.t/);
    expect(listFiles(fx.warehouse)).toEqual(before);
    expect(await fx.lake.listTables()).toEqual(['ns.t']);
    // Names that only share a prefix of characters do not nest.
    await fx.lake.table('ns.tt').append([{ id: 1 }]);
    await fx.lake.table('ns2.t').append([{ id: 1 }]);
  });

  it('refuses a table whose folder would hold another table\'s', async () => {
    await fx.lake.table('outer.a.b').append([{ id: 1 }]);
    await fx.lake.table('deltaouter.a.b').append([{ id: 1 }], { formats: ['delta'] });
    expect((await errorOf(fx.lake.table('outer.a').append([{ id: 2 }]))).message).toMatch(/table outer\.a: its folder would hold the folder of table outer\.a\.b/);
    expect((await errorOf(fx.lake.table('deltaouter.a').append([{ id: 2 }]))).message).toMatch(/would hold the folder of table deltaouter\.a\.b/);
    // An existing table keeps working.
    await fx.lake.table('outer.a.b').append([{ id: 3 }]);
  });

  it('a composed and a decomposed name are the same table', async () => {
    const composed = 'uni.caf\u00e9';
    const decomposed = 'uni.cafe\u0301';
    expect(composed).not.toBe(decomposed);
    await fx.lake.table(composed).append([{ id: 1 }]);
    const r = await fx.lake.table(decomposed).append([{ id: 2 }]);
    expect(r.created).toBe(false);
    expect(r.table).toBe(composed);
    expect((await fx.lake.table(decomposed).read()).map((x) => Number(x.id)).sort()).toEqual([1, 2]);
    expect((await fx.lake.listTables()).filter((t) => t.startsWith('uni.'))).toEqual([composed]);
    expect(listFiles(join(fx.warehouse, 'uni')).every((f) => f.startsWith('caf\u00e9/'))).toBe(true);
    expect((await fx.lake.table({ namespace: ['uni'], name: 'cafe\u0301' }).read())).toHaveLength(2);
  });
});
