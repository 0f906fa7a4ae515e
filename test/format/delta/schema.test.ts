import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import type { Schema } from '../../../src/format/iceberg/types.ts';
import { columnMappingMode, fromDeltaSchema, protocolFor, toDeltaSchema } from '../../../src/format/delta/schema.ts';
import { thrown } from '../../helpers.ts';

/** The schema of PROTOCOL.md §Example of storing identifiers for nested fields (IcebergCompatV2). */
const nestedExample: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    {
      id: 1,
      name: 'col1',
      required: false,
      type: { type: 'list', 'element-id': 100, 'element-required': false, element: { type: 'list', 'element-id': 101, 'element-required': false, element: 'int' } },
    },
    {
      id: 2,
      name: 'col2',
      required: false,
      type: {
        type: 'map',
        'key-id': 102,
        key: 'int',
        'value-id': 103,
        'value-required': false,
        value: { type: 'list', 'element-id': 104, 'element-required': false, element: 'int' },
      },
    },
    {
      id: 3,
      name: 'col3',
      required: false,
      type: {
        type: 'map',
        'key-id': 105,
        key: 'int',
        'value-id': 106,
        'value-required': false,
        value: {
          type: 'struct',
          fields: [{ id: 4, name: 'subcol1', required: false, type: { type: 'list', 'element-id': 107, 'element-required': false, element: 'int' } }],
        },
      },
    },
  ],
};
const nestedNames = new Map([
  [1, 'col-aaa'],
  [2, 'col-bbb'],
  [3, 'col-ccc'],
  [4, 'col-ddd'],
]);

describe('toDeltaSchema', () => {
  it('records list and map IDs as the protocol example does', () => {
    const delta = toDeltaSchema(nestedExample, nestedNames);
    expect(delta.fields.map((f) => f.metadata)).toEqual([
      { 'delta.columnMapping.id': 1, 'delta.columnMapping.physicalName': 'col-aaa', 'delta.columnMapping.nested.ids': { 'col-aaa.element': 100, 'col-aaa.element.element': 101 } },
      {
        'delta.columnMapping.id': 2,
        'delta.columnMapping.physicalName': 'col-bbb',
        'delta.columnMapping.nested.ids': { 'col-bbb.key': 102, 'col-bbb.value': 103, 'col-bbb.value.element': 104 },
      },
      { 'delta.columnMapping.id': 3, 'delta.columnMapping.physicalName': 'col-ccc', 'delta.columnMapping.nested.ids': { 'col-ccc.key': 105, 'col-ccc.value': 106 } },
    ]);
    const col3 = delta.fields[2]!.type as { valueType: { fields: { metadata: unknown }[] } };
    expect(col3.valueType.fields[0]!.metadata).toEqual({
      'delta.columnMapping.id': 4,
      'delta.columnMapping.physicalName': 'col-ddd',
      'delta.columnMapping.nested.ids': { 'col-ddd.element': 107 },
    });
  });

  it('maps every type of DESIGN.md §3', () => {
    const schema: Schema = {
      type: 'struct',
      'schema-id': 0,
      fields: [
        ['boolean', 'boolean'],
        ['int', 'integer'],
        ['long', 'long'],
        ['float', 'float'],
        ['double', 'double'],
        ['decimal(9, 2)', 'decimal(9,2)'],
        ['date', 'date'],
        ['timestamptz', 'timestamp'],
        ['timestamp', 'timestamp_ntz'],
        ['string', 'string'],
        ['binary', 'binary'],
      ].map(([t], i) => ({ id: i + 1, name: `c${i}`, required: i % 2 === 0, type: t! })),
    };
    const names = new Map(schema.fields.map((f) => [f.id, `p${f.id}`]));
    const delta = toDeltaSchema(schema, names);
    expect(delta.fields.map((f) => f.type)).toEqual(['boolean', 'integer', 'long', 'float', 'double', 'decimal(9,2)', 'date', 'timestamp', 'timestamp_ntz', 'string', 'binary']);
    expect(delta.fields.map((f) => f.nullable)).toEqual(schema.fields.map((f) => !f.required));
  });

  it('keeps nullability of list elements and map values, and docs as comments', () => {
    const schema: Schema = {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'l', required: true, doc: 'the list', type: { type: 'list', 'element-id': 2, 'element-required': true, element: 'string' } },
        { id: 3, name: 'm', required: false, type: { type: 'map', 'key-id': 4, key: 'string', 'value-id': 5, 'value-required': true, value: 'long' } },
      ],
    };
    const delta = toDeltaSchema(schema, new Map([[1, 'l'], [3, 'm']]));
    expect(delta.fields[0]).toMatchObject({ nullable: false, type: { type: 'array', elementType: 'string', containsNull: false }, metadata: { comment: 'the list' } });
    expect(delta.fields[1]).toMatchObject({ nullable: true, type: { type: 'map', keyType: 'string', valueType: 'long', valueContainsNull: false } });
  });

  it('refuses types with no Delta twin, naming the column', () => {
    for (const t of ['time', 'uuid', 'fixed[16]', 'timestamp_ns', 'timestamptz_ns']) {
      const schema: Schema = {
        type: 'struct',
        'schema-id': 0,
        fields: [{ id: 1, name: 's', required: false, type: { type: 'struct', fields: [{ id: 2, name: 'inner', required: false, type: t }] } }],
      };
      const e = thrown(() => toDeltaSchema(schema, new Map([[1, 's'], [2, 'inner']])));
      expect(isTwinlakeError(e, 'unsupported'), t).toBe(true);
      expect(e.message).toBe(`delta schema: column s.inner has type ${t}, which has no Delta equivalent`);
    }
  });

  it('refuses a field without a physical name', () => {
    expect(isTwinlakeError(thrown(() => toDeltaSchema(nestedExample, new Map([[1, 'a']]))), 'invalid-input')).toBe(true);
  });
});

describe('fromDeltaSchema', () => {
  it('reads back what toDeltaSchema wrote: IDs, nested IDs, physical names', () => {
    const text = JSON.stringify(toDeltaSchema(nestedExample, nestedNames));
    const { schema, physicalNames } = fromDeltaSchema(text, 'name');
    expect(schema.fields).toEqual(nestedExample.fields);
    expect(physicalNames).toEqual(nestedNames);
  });

  it('uses logical names in mode none, even when mapping metadata is present', () => {
    const text = JSON.stringify(toDeltaSchema(nestedExample, nestedNames));
    const { schema, physicalNames } = fromDeltaSchema(text, 'none');
    expect(schema.fields.map((f) => f.id)).toEqual([1, 2, 3]);
    expect([...physicalNames.entries()]).toEqual([
      [1, 'col1'],
      [2, 'col2'],
      [3, 'col3'],
      [4, 'subcol1'],
    ]);
  });

  it('assigns IDs to a table without column mapping: top-level columns first, then nested', () => {
    const text = JSON.stringify({
      type: 'struct',
      fields: [
        { name: 'a', type: 'integer', nullable: false, metadata: {} },
        { name: 'b', type: { type: 'struct', fields: [{ name: 'd', type: 'short', nullable: true, metadata: {} }] }, nullable: true, metadata: {} },
        { name: 'c', type: { type: 'array', elementType: 'byte', containsNull: false }, nullable: true, metadata: {} },
        { name: 'f', type: { type: 'map', keyType: 'string', valueType: 'timestamp_ntz', valueContainsNull: true }, nullable: true, metadata: { comment: 'hi' } },
      ],
    });
    const { schema, physicalNames } = fromDeltaSchema(text, 'none');
    expect(schema.fields).toEqual([
      { id: 1, name: 'a', required: true, type: 'int' },
      { id: 2, name: 'b', required: false, type: { type: 'struct', fields: [{ id: 5, name: 'd', required: false, type: 'int' }] } },
      { id: 3, name: 'c', required: false, type: { type: 'list', 'element-id': 6, element: 'int', 'element-required': true } },
      { id: 4, name: 'f', required: false, doc: 'hi', type: { type: 'map', 'key-id': 7, key: 'string', 'value-id': 8, value: 'timestamp', 'value-required': false } },
    ]);
    expect(physicalNames.get(5)).toBe('d');
  });

  it('assigns missing nested IDs above the largest ID in the schema', () => {
    const text = JSON.stringify({
      type: 'struct',
      fields: [
        {
          name: 'arr',
          type: { type: 'array', elementType: 'long', containsNull: true },
          nullable: true,
          metadata: { 'delta.columnMapping.id': 7, 'delta.columnMapping.physicalName': 'col-7' },
        },
      ],
    });
    const { schema } = fromDeltaSchema(text, 'id');
    expect(schema.fields[0]).toMatchObject({ id: 7, type: { 'element-id': 8 } });
  });

  it('parses the Delta type names', () => {
    const names = ['string', 'long', 'integer', 'short', 'byte', 'float', 'double', 'boolean', 'binary', 'date', 'timestamp', 'timestamp_ntz', 'decimal(38,18)', 'decimal( 5 , 3 )', 'decimal'];
    const text = JSON.stringify({ type: 'struct', fields: names.map((t, i) => ({ name: `c${i}`, type: t, nullable: true, metadata: {} })) });
    expect(fromDeltaSchema(text, 'none').schema.fields.map((f) => f.type)).toEqual([
      'string',
      'long',
      'int',
      'int',
      'int',
      'float',
      'double',
      'boolean',
      'binary',
      'date',
      'timestamptz',
      'timestamp',
      'decimal(38, 18)',
      'decimal(5, 3)',
      'decimal(10, 0)',
    ]);
  });

  it('refuses unknown types and malformed schemas clearly', () => {
    const e = thrown(() => fromDeltaSchema('{"type":"struct","fields":[{"name":"x","type":"interval","nullable":true,"metadata":{}}]}', 'none'));
    expect(isTwinlakeError(e, 'unsupported')).toBe(true);
    expect(e.message).toBe('delta schema: column x has type interval, which Twinlake cannot read');
    expect(isTwinlakeError(thrown(() => fromDeltaSchema('{"type":"array"}', 'none')), 'data-invalid')).toBe(true);
    expect(isTwinlakeError(thrown(() => fromDeltaSchema('not json', 'none')), 'data-invalid')).toBe(true);
    const dup = JSON.stringify({
      type: 'struct',
      fields: ['a', 'b'].map((n) => ({ name: n, type: 'long', nullable: true, metadata: { 'delta.columnMapping.id': 1, 'delta.columnMapping.physicalName': n } })),
    });
    expect(thrown(() => fromDeltaSchema(dup, 'name')).message).toMatch(/field id 1 is used twice/);
  });
});

describe('protocolFor', () => {
  const plain: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type: 'timestamptz' }] };
  const ntz: Schema = {
    type: 'struct',
    'schema-id': 0,
    fields: [{ id: 1, name: 'a', required: false, type: { type: 'list', 'element-id': 2, 'element-required': false, element: 'timestamp' } }],
  };

  it('uses legacy versions while no reader feature is needed', () => {
    expect(protocolFor(plain, { columnMapping: false })).toEqual({ minReaderVersion: 1, minWriterVersion: 2 });
    expect(protocolFor(plain, { columnMapping: true })).toEqual({ minReaderVersion: 2, minWriterVersion: 5 });
  });

  it('moves to table features for timestamp_ntz (even nested) and deletion vectors', () => {
    expect(protocolFor(ntz, { columnMapping: true })).toEqual({
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: ['columnMapping', 'timestampNtz'],
      writerFeatures: ['columnMapping', 'timestampNtz'],
    });
    expect(protocolFor(plain, { columnMapping: false, deletionVectors: true })).toEqual({
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: ['deletionVectors'],
      writerFeatures: ['deletionVectors'],
    });
  });
});

describe('columnMappingMode', () => {
  it('honors the table property only when the protocol supports column mapping', () => {
    const conf = { 'delta.columnMapping.mode': 'name' };
    expect(columnMappingMode({ minReaderVersion: 2, minWriterVersion: 5 }, conf)).toBe('name');
    expect(columnMappingMode({ minReaderVersion: 1, minWriterVersion: 2 }, conf)).toBe('none');
    expect(columnMappingMode({ minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['timestampNtz'] }, conf)).toBe('none');
    expect(columnMappingMode({ minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['columnMapping'] }, { 'delta.columnMapping.mode': 'id' })).toBe('id');
    expect(columnMappingMode({ minReaderVersion: 2, minWriterVersion: 5 }, {})).toBe('none');
    expect(isTwinlakeError(thrown(() => columnMappingMode({ minReaderVersion: 2, minWriterVersion: 5 }, { 'delta.columnMapping.mode': 'x' })), 'data-invalid')).toBe(true);
  });
});
