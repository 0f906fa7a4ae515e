import { describe, expect, test } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import {
  assignFreshIds,
  canPromote,
  evolveSchema,
  indexById,
  isPrimitive,
  maxFieldId,
  nameMapping,
  parseNameMapping,
  typeToString,
} from '../../../src/format/iceberg/schema.ts';
import type { Schema, StructType } from '../../../src/format/iceberg/types.ts';

/** A table schema with every nesting kind: struct, list of structs, map with struct values. */
const table: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'int' },
    { id: 2, name: 'point', required: false, type: { type: 'struct', fields: [{ id: 5, name: 'x', required: false, type: 'float' }] } },
    {
      id: 3,
      name: 'items',
      required: false,
      type: { type: 'list', 'element-id': 6, 'element-required': false, element: { type: 'struct', fields: [{ id: 7, name: 'sku', required: false, type: 'string' }] } },
    },
    {
      id: 4,
      name: 'attrs',
      required: false,
      type: {
        type: 'map',
        'key-id': 8,
        key: 'string',
        'value-id': 9,
        'value-required': false,
        value: { type: 'struct', fields: [{ id: 10, name: 'v', required: false, type: 'decimal(9,2)' }] },
      },
    },
  ],
};

/** The same shape as a batch would describe it: names and types, IDs meaningless. */
function batchOf(s: StructType): StructType {
  let n = 1000;
  return assignFreshIds(s, () => n++);
}

function error(fn: () => unknown) {
  try {
    fn();
  } catch (e) {
    if (isTwinlakeError(e)) return e;
    throw e;
  }
  throw new Error('expected an error');
}

describe('indexById and maxFieldId', () => {
  test('covers nested fields with synthetic element/key/value fields and their paths', () => {
    const index = indexById(table);
    expect([...index.keys()].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(index.get(5)!.path).toEqual(['point', 'x']);
    expect(index.get(6)!.field).toMatchObject({ name: 'element', required: false });
    expect(index.get(7)!.path).toEqual(['items', 'element', 'sku']);
    expect(index.get(8)!.field).toEqual({ id: 8, name: 'key', required: true, type: 'string' });
    expect(index.get(9)!.path).toEqual(['attrs', 'value']);
    expect(index.get(10)!.path).toEqual(['attrs', 'value', 'v']);
  });

  test('maxFieldId finds the deepest highest ID', () => {
    expect(maxFieldId(table)).toBe(10);
    expect(maxFieldId('int')).toBe(0);
    expect(maxFieldId({ type: 'list', 'element-id': 42, 'element-required': true, element: 'int' })).toBe(42);
  });
});

describe('assignFreshIds', () => {
  test("a struct's fields take IDs before their children, as Java's AssignFreshIds", () => {
    const input: StructType = {
      type: 'struct',
      fields: [
        { id: 0, name: 'a', required: true, type: 'int' },
        { id: 0, name: 'b', required: false, type: { type: 'struct', fields: [{ id: 0, name: 'c', required: false, type: 'int' }, { id: 0, name: 'd', required: false, type: 'int' }] } },
        {
          id: 0,
          name: 'e',
          required: false,
          type: { type: 'list', 'element-id': 0, 'element-required': false, element: { type: 'struct', fields: [{ id: 0, name: 'f', required: false, type: 'int' }] } },
        },
        { id: 0, name: 'g', required: false, type: { type: 'map', 'key-id': 0, key: 'string', 'value-id': 0, 'value-required': true, value: 'long' } },
      ],
    };
    let next = 1;
    const out = assignFreshIds(input, () => next++);
    const ids = [...indexById(out)].map(([id, { path }]) => `${path.join('.')}=${id}`);
    expect(ids.sort()).toEqual(['a=1', 'b.c=5', 'b.d=6', 'b=2', 'e.element.f=8', 'e.element=7', 'e=3', 'g.key=9', 'g.value=10', 'g=4'].sort());
    expect(input.fields[0]!.id).toBe(0); // pure
  });
});

describe('evolveSchema', () => {
  const opts = { allowEvolution: true, newSchemaId: 1 };

  test('an identical batch changes nothing and keeps the schema ID', () => {
    const r = evolveSchema(table, batchOf(table), 10, opts);
    expect(r.changed).toBe(false);
    expect(r.schema).toBe(table);
    expect(r.lastColumnId).toBe(10);
  });

  test('columns missing from the batch are kept; order of the batch does not matter', () => {
    const batch: StructType = { type: 'struct', fields: [table.fields[3]!, table.fields[0]!] };
    const r = evolveSchema(table, batchOf(batch), 10, opts);
    expect(r.changed).toBe(false);
  });

  test('new top-level and nested columns get IDs above last-column-id and are optional', () => {
    const batch = batchOf({
      type: 'struct',
      fields: [
        ...table.fields.slice(0, 1),
        { ...table.fields[1]!, type: { type: 'struct', fields: [{ id: 0, name: 'x', required: false, type: 'float' }, { id: 0, name: 'y', required: true, type: 'float' }] } },
        {
          ...table.fields[2]!,
          type: { type: 'list', 'element-id': 0, 'element-required': false, element: { type: 'struct', fields: [{ id: 0, name: 'sku', required: false, type: 'string' }, { id: 0, name: 'qty', required: false, type: 'int' }] } },
        },
        {
          ...table.fields[3]!,
          type: {
            type: 'map',
            'key-id': 0,
            key: 'string',
            'value-id': 0,
            'value-required': false,
            value: { type: 'struct', fields: [{ id: 0, name: 'v', required: false, type: 'decimal(9,2)' }, { id: 0, name: 'note', required: false, type: 'string' }] },
          },
        },
        { id: 0, name: 'tags', required: true, type: { type: 'list', 'element-id': 0, 'element-required': true, element: 'string' } },
      ],
    });
    const r = evolveSchema(table, batch, 12, opts);
    expect(r.changed).toBe(true);
    expect(r.schema['schema-id']).toBe(1);
    const index = indexById(r.schema);
    const byPath = new Map([...index.values()].map((v) => [v.path.join('.'), v.field]));
    // Existing IDs are untouched.
    for (const [id, { path }] of indexById(table)) expect(byPath.get(path.join('.'))!.id).toBe(id);
    // New columns: IDs above 12, in the order the batch lists them, the column before its element.
    expect(byPath.get('point.y')).toMatchObject({ id: 13, required: false });
    expect(byPath.get('items.element.qty')!.id).toBe(14);
    expect(byPath.get('attrs.value.note')!.id).toBe(15);
    expect(byPath.get('tags')).toMatchObject({ id: 16, required: false });
    expect(byPath.get('tags.element')!.id).toBe(17);
    expect(r.lastColumnId).toBe(17);
    expect(r.schema.fields.map((f) => f.name)).toEqual(['id', 'point', 'items', 'attrs', 'tags']);
  });

  test('allowed promotions: int→long, float→double, decimal precision up', () => {
    const batch: StructType = {
      type: 'struct',
      fields: [
        { id: 0, name: 'id', required: true, type: 'long' },
        { id: 0, name: 'point', required: false, type: { type: 'struct', fields: [{ id: 0, name: 'x', required: false, type: 'double' }] } },
        {
          id: 0,
          name: 'attrs',
          required: false,
          type: { type: 'map', 'key-id': 0, key: 'string', 'value-id': 0, 'value-required': false, value: { type: 'struct', fields: [{ id: 0, name: 'v', required: false, type: 'decimal(12, 2)' }] } },
        },
      ],
    };
    const r = evolveSchema(table, batch, 10, opts);
    expect(r.changed).toBe(true);
    expect(r.lastColumnId).toBe(10);
    const index = indexById(r.schema);
    expect(index.get(1)!.field.type).toBe('long');
    expect(index.get(5)!.field.type).toBe('double');
    expect(index.get(10)!.field.type).toBe('decimal(12, 2)');
    expect(index.get(1)!.field.required).toBe(true);
  });

  test('a narrower batch type is accepted without change (the batch is cast)', () => {
    const wide: Schema = { type: 'struct', 'schema-id': 4, fields: [{ id: 1, name: 'n', required: false, type: 'long' }, { id: 2, name: 'd', required: false, type: 'decimal(10, 2)' }] };
    const r = evolveSchema(wide, { type: 'struct', fields: [{ id: 0, name: 'n', required: false, type: 'int' }, { id: 0, name: 'd', required: false, type: 'decimal(5,2)' }] }, 2, opts);
    expect(r.changed).toBe(false);
    expect(r.schema['schema-id']).toBe(4);
  });

  test('incompatible types are invalid-input naming path, table type and batch type', () => {
    const e = error(() =>
      evolveSchema(
        table,
        {
          type: 'struct',
          fields: [
            { id: 0, name: 'id', required: true, type: 'string' },
            { id: 0, name: 'point', required: false, type: { type: 'struct', fields: [{ id: 0, name: 'x', required: false, type: 'int' }] } },
          ],
        },
        10,
        opts,
      ),
    );
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toContain('column id has type int in the table but string in the batch');
    expect(e.message).toContain('column point.x has type float in the table but int in the batch');
  });

  test('decimal scale changes, struct↔primitive and map key changes are refused', () => {
    const dec: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'd', required: false, type: 'decimal(9,2)' }] };
    expect(error(() => evolveSchema(dec, { type: 'struct', fields: [{ id: 0, name: 'd', required: false, type: 'decimal(12,3)' }] }, 1, opts)).message).toMatch(
      /d has type decimal\(9, 2\) in the table but decimal\(12, 3\)/,
    );
    expect(error(() => evolveSchema(table, { type: 'struct', fields: [{ id: 0, name: 'point', required: false, type: 'string' }] }, 10, opts)).message).toMatch(
      /point has type struct<x: float> in the table but string/,
    );
    const intKeys: Schema = {
      type: 'struct',
      'schema-id': 0,
      fields: [{ id: 1, name: 'm', required: false, type: { type: 'map', 'key-id': 2, key: 'int', 'value-id': 3, 'value-required': false, value: 'int' } }],
    };
    const longKeys: StructType = { type: 'struct', fields: [{ id: 0, name: 'm', required: false, type: { type: 'map', 'key-id': 0, key: 'long', 'value-id': 0, 'value-required': false, value: 'long' } }] };
    expect(error(() => evolveSchema(intKeys, longKeys, 3, opts)).message).toMatch(/map key m\.key .*cannot evolve/);
  });

  test('with evolution off, every difference is listed in one invalid-input error', () => {
    const batch: StructType = {
      type: 'struct',
      fields: [
        { id: 0, name: 'id', required: true, type: 'long' },
        { id: 0, name: 'extra', required: false, type: 'string' },
      ],
    };
    const e = error(() => evolveSchema(table, batch, 10, { allowEvolution: false, newSchemaId: 1 }));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toContain('column id promoted from int to long');
    expect(e.message).toContain('new column extra: string');
    // Nothing different: fine even with evolution off.
    expect(evolveSchema(table, batchOf(table), 10, { allowEvolution: false, newSchemaId: 1 }).changed).toBe(false);
  });

  test('evolving again by the evolved schema gives the same IDs, and the changes name full paths', () => {
    const base: Schema = {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', required: false, type: 'int' },
        { id: 2, name: 'c', required: false, type: { type: 'struct', fields: [{ id: 3, name: 'a', required: false, type: { type: 'struct', fields: [{ id: 4, name: 'x', required: false, type: 'int' }] } }] } },
      ],
    };
    // The batch names a new field of c before the existing c.a, which gains a field too.
    const batch: StructType = {
      type: 'struct',
      fields: [
        { id: 0, name: 'c', required: false, type: { type: 'struct', fields: [
          { id: 0, name: 'new', required: false, type: 'string' },
          { id: 0, name: 'a', required: false, type: { type: 'struct', fields: [{ id: 0, name: 'x', required: false, type: 'long' }, { id: 0, name: 'y', required: false, type: 'string' }] } },
        ] } },
        { id: 0, name: 'id', required: false, type: 'int' },
      ],
    };
    const once = evolveSchema(base, batch, 4, opts);
    const again = evolveSchema(base, once.schema, 4, opts);
    expect(again.schema.fields).toEqual(once.schema.fields);
    expect(again.lastColumnId).toBe(once.lastColumnId);
    expect(once.changes).toEqual([
      { change: 'widened', column: 'c.a.x', from: 'int', to: 'long' },
      { change: 'added', column: 'c.a.y', type: 'string' },
      { change: 'added', column: 'c.new', type: 'string' },
    ]);
  });

  test('names match case-sensitively', () => {
    const r = evolveSchema(table, { type: 'struct', fields: [{ id: 0, name: 'ID', required: false, type: 'int' }] }, 10, opts);
    expect(r.schema.fields.map((f) => f.name)).toEqual(['id', 'point', 'items', 'attrs', 'ID']);
  });
});

describe('name mapping', () => {
  test('mirrors the schema, with element/key/value entries for lists and maps', () => {
    const mapping = nameMapping(table);
    expect(mapping).toEqual([
      { 'field-id': 1, names: ['id'] },
      { 'field-id': 2, names: ['point'], fields: [{ 'field-id': 5, names: ['x'] }] },
      { 'field-id': 3, names: ['items'], fields: [{ 'field-id': 6, names: ['element'], fields: [{ 'field-id': 7, names: ['sku'] }] }] },
      {
        'field-id': 4,
        names: ['attrs'],
        fields: [
          { 'field-id': 8, names: ['key'] },
          { 'field-id': 9, names: ['value'], fields: [{ 'field-id': 10, names: ['v'] }] },
        ],
      },
    ]);
    expect(parseNameMapping(JSON.stringify(mapping))).toEqual(mapping);
  });

  test('aliases (physical names) are listed after the current name', () => {
    const m = nameMapping(table, new Map<number, string | string[]>([[1, 'record_id'], [5, ['x', 'xcoord']]]));
    expect(m[0]!.names).toEqual(['id', 'record_id']);
    expect(m[1]!.fields![0]!.names).toEqual(['x', 'xcoord']);
  });

  test("parses the spec's example and rejects malformed mappings", () => {
    const spec = `[ { "field-id": 1, "names": ["id", "record_id"] },
      { "field-id": 2, "names": ["data"] },
      { "names": ["location"], "fields": [
        { "field-id": 4, "names": ["latitude", "lat"] },
        { "field-id": 5, "names": ["longitude", "long"] } ] } ]`;
    const m = parseNameMapping(spec);
    expect(m[2]!['field-id']).toBeUndefined();
    expect(m[2]!.fields![1]!.names).toEqual(['longitude', 'long']);
    expect(() => parseNameMapping('{"a": 1}')).toThrow(expect.objectContaining({ kind: 'data-invalid' }));
    expect(() => parseNameMapping('[{"field-id": 1}]')).toThrow(/names/);
    expect(() => parseNameMapping('[{"field-id": "1", "names": []}]')).toThrow(/field-id/);
  });
});

describe('type helpers', () => {
  test('typeToString and isPrimitive', () => {
    expect(typeToString(table.fields[3]!.type)).toBe('map<string, struct<v: decimal(9, 2)>>');
    expect(typeToString(table.fields[2]!.type)).toBe('list<struct<sku: string>>');
    expect(isPrimitive('fixed[16]')).toBe(true);
    expect(isPrimitive(table)).toBe(false);
  });

  test('canPromote follows the v1/v2 promotion table', () => {
    expect(canPromote('int', 'long')).toBe(true);
    expect(canPromote('long', 'int')).toBe(false);
    expect(canPromote('float', 'double')).toBe(true);
    expect(canPromote('decimal(9,2)', 'decimal(10, 2)')).toBe(true);
    expect(canPromote('decimal(9,2)', 'decimal(9,2)')).toBe(false);
    expect(canPromote('decimal(9,2)', 'decimal(10,3)')).toBe(false);
    expect(canPromote('date', 'timestamp')).toBe(false);
  });
});
