import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseJson, stringifyJson } from '../../src/core/json.ts';
import { typeToString } from '../../src/format/iceberg/schema.ts';
import type { IcebergType, StructType } from '../../src/format/iceberg/types.ts';
import { errorOf } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

/**
 * Later batches are read against the table's schema at every depth: nulls and empty values fit
 * any type, the widening rules hold inside structs, lists and maps, maps stay maps, and new nested
 * fields are added by evolution with new field IDs in both formats.
 */

const byId = (rows: Record<string, unknown>[]) => [...rows].sort((a, b) => Number(a.id) - Number(b.id));

/** Rows as JSON text, so longs (bigint or number) and nested values compare as one form. */
function canonical(rows: Record<string, unknown>[]): unknown[] {
  return byId(rows).map((r) => parseJson(stringifyJson(r)));
}

/** The newest Delta `metaData` of a table directory: its schema, parsed, and its configuration. */
function deltaMetadata(tableDir: string): { schema: { fields: DeltaField[] }; configuration: Record<string, string> } {
  const log = join(tableDir, '_delta_log');
  const commits = readdirSync(log).filter((n) => /^\d{20}\.json$/.test(n)).sort();
  let found: { schemaString: string; configuration: Record<string, string> } | undefined;
  for (const name of commits) {
    for (const line of readFileSync(join(log, name), 'utf8').split('\n')) {
      if (line.trim() && parseJson(line).metaData) found = parseJson(line).metaData;
    }
  }
  return { schema: parseJson(found!.schemaString), configuration: found!.configuration };
}

interface DeltaField {
  name: string;
  type: unknown;
  metadata: Record<string, unknown>;
}

/** path → Delta column mapping ID, through structs, array elements and map values. */
function deltaIds(fields: DeltaField[], prefix = ''): Record<string, number> {
  const out: Record<string, number> = {};
  const visit = (type: any, path: string) => {
    if (typeof type !== 'object' || type === null) return;
    if (type.type === 'struct') Object.assign(out, deltaIds(type.fields, `${path}.`));
    else if (type.type === 'array') visit(type.elementType, `${path}.element`);
    else if (type.type === 'map') visit(type.valueType, `${path}.value`);
  };
  for (const f of fields) {
    out[prefix + f.name] = Number(f.metadata['delta.columnMapping.id']);
    visit(f.type, prefix + f.name);
  }
  return out;
}

/** path → Iceberg field ID of struct fields, through list elements and map values. */
function icebergIds(struct: StructType, prefix = ''): Record<string, number> {
  const out: Record<string, number> = {};
  const visit = (type: IcebergType, path: string) => {
    if (typeof type === 'string') return;
    if (type.type === 'struct') Object.assign(out, icebergIds(type, `${path}.`));
    else if (type.type === 'list') visit(type.element, `${path}.element`);
    else visit(type.value, `${path}.value`);
  };
  for (const f of struct.fields) {
    out[prefix + f.name] = f.id;
    visit(f.type, prefix + f.name);
  }
  return out;
}

const ORDER = {
  id: 1,
  customer: { name: 'Søren', address: { city: 'Aarhus', zip: 8000 } },
  items: [{ sku: 'a', qty: 2, price: 9.5 }],
  tags: ['new'],
};

describe('integers of either sign', () => {
  const fx = lakehouseFixture();

  it('are long at the top, in structs and in lists, and read back as numbers in both formats', async () => {
    const t = fx.lake.table('signs.mixed');
    await t.append([
      { id: 1, t: -3, o: { a: -1, l: [1, -2] }, ls: [{ x: -5 }] },
      { id: 2, t: 4, o: { a: 2, l: [3] }, ls: [{ x: 6 }] },
    ]);
    expect(typeToString(await t.schema())).toBe('struct<id: long, t: long, o: struct<a: long, l: list<long>>, ls: list<struct<x: long>>>');
    for (const format of ['iceberg', 'delta'] as const) {
      expect(canonical(await t.read({ format }))).toEqual([
        { id: 1, t: -3, o: { a: -1, l: [1, -2] }, ls: [{ x: -5 }] },
        { id: 2, t: 4, o: { a: 2, l: [3] }, ls: [{ x: 6 }] },
      ]);
    }
  });

  it('become decimal(38, 0) only when a value does not fit 64 bits', async () => {
    const t = fx.lake.table('signs.wide');
    // Integers past 2^63 come as text: an NDJSON stream.
    const text = '{"id": 1, "n": -1, "big": 9223372036854775808}\n{"id": 2, "n": 1, "big": -1}\n';
    await t.append({ stream: Readable.from([text]), format: 'ndjson' });
    const schema = await t.schema();
    expect(schema.fields.map((f) => [f.name, f.type])).toEqual([['id', 'long'], ['n', 'long'], ['big', 'decimal(38, 0)']]);
    for (const format of ['iceberg', 'delta'] as const) {
      expect(byId(await t.read({ format })).map((r) => [Number(r.n), String(r.big)])).toEqual([[-1, '9223372036854775808'], [1, '-1']]);
    }
  });
});

describe('a later batch is read against the table schema', () => {
  const fx = lakehouseFixture();

  it('nulls and empty values in nested columns fit their types', async () => {
    const t = fx.lake.table('nested.empties');
    await t.append([ORDER]);
    const before = await t.schema();
    for (const [i, record] of [
      { items: [] },
      { customer: null },
      { customer: { address: null } },
      { items: null },
      { customer: { name: null, address: { city: null } }, items: [null, { sku: null }], tags: [] },
      { customer: {}, tags: [null] },
    ].entries()) {
      await t.append([{ id: 10 + i, ...record }]);
    }
    const after = await t.schema();
    expect(after).toEqual(before);
    for (const format of ['iceberg', 'delta'] as const) {
      const rows = canonical(await t.read({ format }));
      expect(rows).toEqual([
        ORDER,
        { id: 10, customer: null, items: [], tags: null },
        { id: 11, customer: null, items: null, tags: null },
        { id: 12, customer: { name: null, address: null }, items: null, tags: null },
        { id: 13, customer: null, items: null, tags: null },
        { id: 14, customer: { name: null, address: { city: null, zip: null } }, items: [null, { sku: null, qty: null, price: null }], tags: [] },
        { id: 15, customer: { name: null, address: null }, items: null, tags: [null] },
      ]);
    }
  });

  it('widening rules and integers into double and decimal columns hold at every depth', async () => {
    const t = fx.lake.table('nested.widen');
    const schema: StructType = {
      type: 'struct',
      fields: [
        { id: 0, name: 'id', required: false, type: 'long' },
        {
          id: 0,
          name: 'o',
          required: false,
          type: {
            type: 'struct',
            fields: [
              { id: 0, name: 'small', required: false, type: 'int' },
              { id: 0, name: 'price', required: false, type: 'double' },
              { id: 0, name: 'amount', required: false, type: 'decimal(10, 2)' },
            ],
          },
        },
        { id: 0, name: 'l', required: false, type: { type: 'list', 'element-id': 0, element: 'double', 'element-required': false } },
      ],
    };
    await t.create(schema);
    // 1 fits the int; 5,000,000,000 widens it.
    expect((await t.append([{ id: 1, o: { small: 1, price: 2, amount: 3 }, l: [4, 5] }])).schemaChanges).toEqual([]);
    expect((await t.append([{ id: 2, o: { small: 5_000_000_000, price: 2.5, amount: '3.25' }, l: [-1] }])).schemaChanges).toEqual([{ change: 'widened', column: 'o.small', from: 'int', to: 'long' }]);
    const after = await t.schema();
    // Whole numbers were read as the table's double and decimal; the int widened to long.
    expect(typeToString(after)).toBe('struct<id: long, o: struct<small: long, price: double, amount: decimal(10, 2)>, l: list<double>>');
    for (const format of ['iceberg', 'delta'] as const) {
      expect(canonical(await t.read({ format }))).toEqual([
        { id: 1, o: { small: 1, price: 2, amount: '3.00' }, l: [4, 5] },
        { id: 2, o: { small: 5_000_000_000, price: 2.5, amount: '3.25' }, l: [-1] },
      ]);
    }
    // A nested value that does not fit fails on its row and names the column.
    const err = await errorOf(t.append([{ id: 3, o: { amount: '1.234' } }]));
    expect(err.message).toMatch(/o\.amount/);
    expect(err.message).toMatch(/1\.234/);
  });

  it('a map column declared at creation stays a map when later batches are JSON objects', async () => {
    const t = fx.lake.table('nested.maps');
    const map = (value: IcebergType) => ({ type: 'map' as const, 'key-id': 0, key: 'string', 'value-id': 0, value, 'value-required': false });
    await t.create({
      type: 'struct',
      fields: [
        { id: 0, name: 'id', required: false, type: 'long' },
        { id: 0, name: 'attrs', required: false, type: map('string') },
        { id: 0, name: 'counts', required: false, type: map('long') },
        { id: 0, name: 'nested', required: false, type: { type: 'struct', fields: [{ id: 0, name: 'm', required: false, type: map('double') }] } },
      ],
    });
    const before = await t.schema();
    await t.append([{ id: 1, attrs: { color: 'red', size: 'L' }, counts: { a: -1, b: 2 }, nested: { m: { x: 1, y: 1.5 } } }]);
    await t.append([{ id: 2, attrs: { other: 'x' }, counts: {}, nested: { m: null } }]);
    await t.append([{ id: 3, attrs: null }]);
    expect(await t.schema()).toEqual(before);
    for (const format of ['iceberg', 'delta'] as const) {
      const rows = byId(await t.read({ format })).map((r) => parseJson(stringifyJson(r)));
      const entries = (m: unknown) => (m === null ? null : Object.fromEntries((m as { key: string; value: unknown }[]).map((e) => [e.key, e.value])));
      expect(rows.map((r: any) => [r.id, entries(r.attrs), entries(r.counts), r.nested && entries(r.nested.m)])).toEqual([
        [1, { color: 'red', size: 'L' }, { a: -1, b: 2 }, { x: 1, y: 1.5 }],
        [2, { other: 'x' }, {}, null],
        [3, null, null, null],
      ]);
    }
  });

  it('adds new nested fields at any depth with new field IDs, in Iceberg and in Delta', async () => {
    const t = fx.lake.table('nested.evolve');
    const first = await t.append([ORDER]);
    expect(first.schemaChanges).toEqual([]);
    const old = await t.schema();
    const second = await t.append([{ id: 2, customer: { name: 'Ada', email: 'a@x', address: { city: 'London', geo: { lat: 51.5 } } }, items: [{ sku: 'b', color: 'blue' }] }]);
    const schema = await t.schema();
    expect(typeToString(schema)).toBe(
      'struct<id: long, customer: struct<name: string, address: struct<city: string, zip: long, geo: struct<lat: double>>, email: string>, ' +
        'items: list<struct<sku: string, qty: long, price: double, color: string>>, tags: list<string>>',
    );
    const ids = icebergIds(schema);
    const oldIds = icebergIds(old);
    // Old fields keep their IDs; new ones take IDs above every ID the table had.
    for (const [path, id] of Object.entries(oldIds)) expect(ids[path], path).toBe(id);
    const maxOld = Math.max(...Object.values(oldIds));
    const added = Object.entries(ids).filter(([p]) => !(p in oldIds));
    expect(added.map(([p]) => p).sort()).toEqual(['customer.address.geo', 'customer.address.geo.lat', 'customer.email', 'items.element.color']);
    for (const [, id] of added) expect(id).toBeGreaterThan(maxOld);

    // The result says what the write changed, with full nested paths.
    expect(second.schemaChanges).toEqual([
      { change: 'added', column: 'customer.address.geo', type: 'struct<lat: double>' },
      { change: 'added', column: 'customer.email', type: 'string' },
      { change: 'added', column: 'items.element.color', type: 'string' },
    ]);
    const delta = deltaMetadata(join(fx.warehouse, 'nested', 'evolve'));
    expect(deltaIds(delta.schema.fields)).toEqual(ids);
    expect(Number(delta.configuration['delta.columnMapping.maxColumnId'])).toBe((await t.metadata())['last-column-id']);

    for (const format of ['iceberg', 'delta'] as const) {
      expect(canonical(await t.read({ format }))).toEqual([
        { ...ORDER, customer: { ...ORDER.customer, address: { ...ORDER.customer.address, geo: null }, email: null }, items: [{ ...ORDER.items[0], color: null }] },
        { id: 2, customer: { name: 'Ada', address: { city: 'London', zip: null, geo: { lat: 51.5 } }, email: 'a@x' }, items: [{ sku: 'b', qty: null, price: null, color: 'blue' }], tags: null },
      ]);
    }
    // The version before the evolution still reads with its own schema.
    const before = await t.read({ format: 'delta', version: first.deltaVersion });
    expect(Object.keys((before[0] as any).customer)).toEqual(['name', 'address']);
  });

  it('refuses a nested type that does not fit and commits nothing', async () => {
    const t = fx.lake.table('nested.refuse');
    const r = await t.append([ORDER]);
    const err = await errorOf(t.append([{ id: 2, customer: { address: 'just text' } }]));
    expect(err.message).toMatch(/customer\.address/);
    const err2 = await errorOf(t.append([{ id: 3, tags: { a: 1 } }]));
    expect(err2.message).toMatch(/tags/);
    // Mixed values leave the sample's type open: the table's type reads them, and the one that
    // does not fit is named by column and line.
    const err3 = await errorOf(t.append([{ id: 4, customer: { name: 'x' } }, { id: 5, items: [{ sku: 'a' }, 'oops'] }, { id: 6, items: 'text' }]));
    expect(err3.message).toMatch(/^records: column "items\.element" at record 2: expected struct<sku: string, qty: long, price: double>, found "oops"/);
    const d = await t.describe();
    expect(d.currentSnapshotId).toBe(r.snapshotId);
    expect(d.deltaVersion).toBe(r.deltaVersion);
  });

  it('objects whose keys vary are read through a struct column only when every key is a field of it', async () => {
    // Keys that vary from record to record, with values of mixed types, are sampled as a map of
    // unknown values; read through the table's struct, a key it lacks would be lost.
    const t = fx.lake.table('nested.varying_keys');
    const r = await t.append(Array.from({ length: 20 }, (_, i) => ({ id: i, attrs: { a: 'x', b: i } })));
    expect(typeToString(await t.schema())).toBe('struct<id: long, attrs: struct<a: string, b: long>>');
    const err = await errorOf(t.append(Array.from({ length: 100 }, (_, i) => ({ id: 100 + i, attrs: { a: 'y', [`k${i}`]: i } }))));
    expect(err.message).toMatch(/^records: column "attrs": .*struct<a: string, b: long>.* no field k0, k1, k2/);
    expect(err.message).toMatch(/100 keys/);
    const d = await t.describe();
    expect(d.currentSnapshotId).toBe(r.snapshotId);
    expect(d.deltaVersion).toBe(r.deltaVersion);
    expect(typeToString(await t.schema())).toBe('struct<id: long, attrs: struct<a: string, b: long>>');

    // Keys that vary but are all fields of the struct: read through it, every value kept.
    const wide = fx.lake.table('nested.varying_known_keys');
    const fields = Object.fromEntries(Array.from({ length: 20 }, (_, j) => [`f${j}`, j]));
    await wide.append([{ id: 0, attrs: { a: 'x', ...fields } }]);
    await wide.append(Array.from({ length: 100 }, (_, i) => ({ id: 1 + i, attrs: { a: 'y', [`f${i % 20}`]: i } })));
    for (const format of ['iceberg', 'delta'] as const) {
      const rows = byId(await wide.read({ format })) as { id: number; attrs: Record<string, unknown> }[];
      expect(rows).toHaveLength(101);
      expect(rows.slice(1).map((x) => [x.attrs.a, Number(x.attrs[`f${(Number(x.id) - 1) % 20}`])])).toEqual(Array.from({ length: 100 }, (_, i) => ['y', i]));
    }
  });

  it('a list element of the wrong shape is named at its own line', async () => {
    const t = fx.lake.table('nested.element_line');
    await t.append([ORDER]);
    const text = ['{"id": 2, "items": [{"sku": "a"}]}', '{"id": 3, "items": [{"sku": "b"}, 5]}', '{"id": 4, "items": [{"sku": "c"}]}', ''].join('\n');
    const err = await errorOf(t.append({ stream: Readable.from([text]), format: 'ndjson' }));
    expect(err.message).toMatch(/column "items\.element" at line 2: expected struct<sku: string, qty: long, price: double>, found 5$/);
  });

  it('Delta-only tables read later batches against their schema too', async () => {
    const t = fx.lake.table('nested.delta_only');
    await t.append([{ ...ORDER, m: { a: 'b' } }], { formats: ['delta'] });
    const evolved = await t.append([{ id: 2, customer: null, items: [], tags: null }, { id: 3, customer: { address: null, vip: true }, items: [{ sku: 'z', price: 3 }] }]);
    const schema = await t.schema();
    expect(typeToString(schema)).toBe(
      'struct<id: long, customer: struct<name: string, address: struct<city: string, zip: long>, vip: boolean>, items: list<struct<sku: string, qty: long, price: double>>, tags: list<string>, m: struct<a: string>>',
    );
    expect(evolved.schemaChanges).toEqual([{ change: 'added', column: 'customer.vip', type: 'boolean' }]);
    const delta = deltaMetadata(join(fx.warehouse, 'nested', 'delta_only'));
    expect(deltaIds(delta.schema.fields)).toEqual(icebergIds(schema));
    expect(canonical(await t.read({ format: 'delta' }))).toEqual([
      { ...ORDER, customer: { ...ORDER.customer, vip: null }, m: { a: 'b' } },
      { id: 2, customer: null, items: [], tags: null, m: null },
      { id: 3, customer: { name: null, address: null, vip: true }, items: [{ sku: 'z', qty: null, price: 3 }], tags: null, m: null },
    ]);
  });
});
