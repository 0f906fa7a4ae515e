import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorOf, ndjson } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

const byId = (rows: Record<string, unknown>[]) => [...rows].sort((a, b) => Number(a.id) - Number(b.id));

describe('merge: columns that only steer it, and its messages', () => {
  const fx = lakehouseFixture();

  it('keeps --delete-when and --order-by columns out of the table (a CDC feed)', async () => {
    const t = fx.lake.table('cdc.orders');
    await t.append([{ id: 1, status: 'new' }, { id: 2, status: 'new' }]);
    const feed = join(fx.warehouse, 'feed.ndjson');
    writeFileSync(feed, ndjson([
      { id: 1, status: 'paid', op: 'U', seq: 2 },
      { id: 1, status: 'shipped', op: 'U', seq: 3 },
      { id: 1, status: 'stale', op: 'U', seq: 1 },
      { id: 2, status: 'gone', op: 'D', seq: 4 },
      { id: 3, status: 'new', op: 'I', seq: 5 },
    ]));
    const r = await t.merge({ path: feed }, { keys: ['id'], deleteWhen: "op = 'D'", orderBy: 'seq', excludeColumns: ['op', 'seq'] });
    expect([r.inserted, r.updated, r.deleted]).toEqual([1, 1, 1]);
    expect((await t.schema()).fields.map((f) => f.name)).toEqual(['id', 'status']);
    for (const format of ['iceberg', 'delta'] as const) {
      expect(byId(await t.read({ format }))).toEqual([{ id: 1, status: 'shipped' }, { id: 3, status: 'new' }]);
    }
    // A merge-created table and a plain write keep them out too.
    const created = fx.lake.table('cdc.fresh');
    await created.merge({ path: feed }, { keys: ['id'], deleteWhen: "op = 'D'", orderBy: 'seq', excludeColumns: ['op', 'seq'] });
    expect((await created.schema()).fields.map((f) => f.name)).toEqual(['id', 'status']);
    expect(byId(await created.read()).map((x) => x.id)).toEqual([1, 3]);
    const plain = fx.lake.table('cdc.plain');
    await plain.append({ path: feed }, { excludeColumns: ['seq'] });
    expect((await plain.schema()).fields.map((f) => f.name)).toEqual(['id', 'status', 'op']);
    const deltaOnly = fx.lake.table('cdc.deltaonly');
    await deltaOnly.append({ path: feed }, { excludeColumns: ['op', 'seq'], formats: ['delta'] });
    expect((await deltaOnly.schema()).fields.map((f) => f.name)).toEqual(['id', 'status']);

    expect((await errorOf(t.merge({ path: feed }, { keys: ['id'], excludeColumns: ['opp'] }))).message).toMatch(/excluded column opp is not in the input \(columns: id, status, op, seq\)/);
    expect((await errorOf(t.merge({ path: feed }, { keys: ['id'], excludeColumns: ['id'] }))).message).toMatch(/key column id cannot be excluded/);
  });

  it('refuses a nested key as nested, and names the input\'s columns for --order-by and --delete-when', async () => {
    const t = fx.lake.table('msg.t');
    await t.append([{ id: 1, customer: { id: 7, name: 'a' }, extra: 'x' }]);
    const nested = await errorOf(t.merge([{ id: 1, customer: { id: 7, name: 'b' } }], { keys: ['customer.id'] }));
    expect(nested.message).toMatch(/key column customer\.id is nested inside customer \(struct<.*>\); keys must be top-level primitive columns/);
    expect(nested.message).not.toMatch(/missing/);
    // `extra` is a table column, but not in this batch: the errors list the batch's columns.
    const order = await errorOf(t.merge([{ id: 1, v: 2 }], { keys: ['id'], orderBy: 'extra' }));
    expect(order.message).toMatch(/--order-by column extra is not in the input \(columns: id, v\)/);
    const del = await errorOf(t.merge([{ id: 1, v: 2 }], { keys: ['id'], deleteWhen: "op = 'D'" }));
    expect(del.message).toMatch(/--delete-when "op = 'D'"/);
    expect(del.message).toMatch(/the input's columns: id, v\)/);
    expect(del.message).not.toMatch(/customer/);
  });
});
