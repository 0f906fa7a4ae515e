import { describe, expect, it } from 'vitest';
import { decodeBounds, decodeFieldSummaries, deltaBound } from '../../../src/format/expressions/decode.ts';
import { toBinary } from '../../../src/format/iceberg/single-value.ts';
import type { PartitionField, Schema } from '../../../src/format/iceberg/types.ts';

const schema: Schema = {
  type: 'struct',
  'schema-id': 1,
  fields: [
    { id: 1, name: 'n', required: false, type: 'long' },
    { id: 2, name: 'x', required: false, type: 'double' },
    { id: 3, name: 's', required: false, type: { type: 'struct', fields: [{ id: 4, name: 'ts', required: false, type: 'timestamptz' }] } },
    { id: 5, name: 'name', required: false, type: 'string' },
  ],
};

describe('decodeBounds', () => {
  it('decodes by field type, nested fields included, and reads pre-promotion 4-byte bounds', () => {
    const bounds = new Map<number, Uint8Array>([
      [1, toBinary('int', -7)], // written while the column was an int
      [2, toBinary('float', 1.5)],
      [4, toBinary('timestamptz', -1n)],
      [5, toBinary('string', 'é😀')],
      [99, Uint8Array.of(1)], // not in the schema
    ]);
    expect(decodeBounds(schema, bounds)).toEqual(new Map<number, unknown>([[1, -7], [2, 1.5], [4, -1n], [5, 'é😀']]));
  });

  it('leaves out bounds it cannot decode', () => {
    const bounds = new Map<number, Uint8Array>([[1, Uint8Array.of(1, 2, 3)], [5, Uint8Array.of(0xff, 0xfe)]]);
    expect(decodeBounds(schema, bounds).size).toBe(0);
  });
});

describe('decodeFieldSummaries', () => {
  it('decodes by the partition type and marks fields it cannot judge', () => {
    const spec: PartitionField[] = [
      { 'source-id': 4, 'field-id': 1000, name: 'ts_day', transform: 'day' },
      { 'source-id': 5, 'field-id': 1001, name: 'name_trunc', transform: 'truncate[2]' },
      { 'source-id': 77, 'field-id': 1002, name: 'gone', transform: 'identity' },
      { 'source-id': 1, 'field-id': 1003, name: 'n_z', transform: 'zorder' },
      { 'source-id': 1, 'field-id': 1004, name: 'n_bucket', transform: 'bucket[8]' },
    ];
    const out = decodeFieldSummaries(spec, schema, [
      { 'contains-null': true, 'contains-nan': false, 'lower-bound': toBinary('date', -3), 'upper-bound': toBinary('date', 19782) },
      { 'contains-null': false, 'lower-bound': toBinary('string', 'ab'), 'upper-bound': toBinary('string', 'zz') },
      { 'contains-null': false },
      { 'contains-null': false },
      { 'contains-null': false, 'lower-bound': Uint8Array.of(1) }, // an int needs 4 bytes
    ]);
    expect(out).toEqual([
      { containsNull: true, containsNaN: false, lower: -3, upper: 19782 },
      { containsNull: false, lower: 'ab', upper: 'zz' },
      undefined,
      undefined,
      undefined,
    ]);
    expect(decodeFieldSummaries(spec, schema, undefined)).toBeUndefined();
  });
});

describe('deltaBound', () => {
  it('widens timestamps by just under a millisecond on both sides', () => {
    expect(deltaBound('timestamptz', '2024-01-01T00:00:00.123Z', 'max')).toEqual({ value: 1_704_067_200_123_999n });
    expect(deltaBound('timestamptz', '2024-01-01T00:00:00.123Z', 'min')).toEqual({ value: 1_704_067_200_122_001n });
    expect(deltaBound('timestamptz', '2024-01-01T02:00:00.000+02:00', 'max')).toEqual({ value: 1_704_067_200_000_999n });
    expect(deltaBound('timestamptz', '2024-01-01T00:00:00.000', 'max')).toEqual({ value: 1_704_067_200_000_999n });
    expect(deltaBound('timestamp', '2024-01-01T00:00:00.000', 'max')).toEqual({ value: 1_704_067_200_000_999n });
    expect(deltaBound('timestamp', '2024-01-01T00:00:00.000+02:00', 'max')).toBeUndefined();
  });

  it('reads string maxima as prefixes, whole code points only', () => {
    expect(deltaBound('string', 'ab', 'min')).toEqual({ value: 'ab' });
    expect(deltaBound('string', 'ab', 'max')).toEqual({ value: 'ab', prefix: true });
    expect(deltaBound('string', 'a\ud83d', 'max')).toEqual({ value: 'a', prefix: true });
  });

  it('keeps decimals only where the JSON number is exact', () => {
    expect(deltaBound('decimal(9, 2)', 12.3, 'min')).toEqual({ value: '12.30' });
    expect(deltaBound('decimal(20, 2)', 12.3, 'min')).toBeUndefined();
    expect(deltaBound('decimal(20, 2)', 1234, 'min')).toEqual({ value: '1234.00' });
    expect(deltaBound('decimal(38, 0)', 123456789012345678901234567890n, 'max')).toEqual({ value: '123456789012345678901234567890' });
    expect(deltaBound('decimal(9, 2)', 1.234, 'min')).toBeUndefined();
  });

  it('converts numbers by type and ignores what does not fit', () => {
    expect(deltaBound('long', 5, 'min')).toEqual({ value: 5n });
    expect(deltaBound('long', 2n ** 60n, 'min')).toEqual({ value: 2n ** 60n });
    expect(deltaBound('int', 5, 'min')).toEqual({ value: 5 });
    expect(deltaBound('float', 0.1, 'min')).toEqual({ value: Math.fround(0.1) });
    expect(deltaBound('double', 'NaN', 'max')).toBeUndefined();
    expect(deltaBound('date', '2024-02-29', 'max')).toEqual({ value: 19782 });
    expect(deltaBound('date', 'garbage', 'max')).toBeUndefined();
    expect(deltaBound('binary', 'abc', 'max')).toBeUndefined();
    expect(deltaBound({ type: 'struct', fields: [] }, { a: 1 }, 'max')).toBeUndefined();
  });
});
