import { describe, expect, it } from 'vitest';
import { checkDeltaPartitioning, checkIdentityUnchanged, emptyStringPartition } from '../../../src/format/dual/delta-partitioning.ts';
import type { DataFile, PartitionSpec, Schema } from '../../../src/format/iceberg/types.ts';
import { thrown } from '../../helpers.ts';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'region', required: false, type: 'string' },
    { id: 2, name: 'n', required: false, type: 'int' },
    { id: 3, name: 'ts', required: false, type: 'timestamptz' },
    { id: 4, name: 'nested', required: false, type: { type: 'struct', fields: [{ id: 5, name: 'city', required: false, type: 'string' }] } },
  ],
};
const spec = (fields: [number, string, string][]): PartitionSpec => ({
  'spec-id': 0,
  fields: fields.map(([source, transform, name], i) => ({ 'source-id': source, 'field-id': 1000 + i, transform, name })),
});
const file = (partition: Record<string, unknown>) => ({ partition }) as unknown as DataFile;

describe('Delta partition rules', () => {
  it('Delta partitions by top-level columns only (an identity of a nested column is refused)', () => {
    expect(() => checkDeltaPartitioning(spec([[1, 'identity', 'region'], [3, 'day', 'ts_day']]), schema)).not.toThrow();
    expect(() => checkDeltaPartitioning(spec([[5, 'truncate[2]', 'city_trunc']]), schema)).not.toThrow();
    expect(thrown(() => checkDeltaPartitioning(spec([[5, 'identity', 'city']]), schema)).message).toBe(
      'partition city: Delta tables can partition by top-level columns only, found identity(nested.city); use --formats iceberg or another transform',
    );
  });

  it('the identity columns of a dual-format table cannot change; other transforms may', () => {
    const before = spec([[1, 'identity', 'region'], [3, 'day', 'ts_day']]);
    expect(() => checkIdentityUnchanged(before, spec([[1, 'identity', 'region'], [3, 'hour', 'ts_hour']]), schema)).not.toThrow();
    expect(thrown(() => checkIdentityUnchanged(before, spec([[1, 'identity', 'region'], [2, 'identity', 'n']]), schema)).message).toMatch(
      /^partition: Delta partition columns cannot change once set, and this table keeps Delta: identity columns are region, the new spec has region, n;/,
    );
  });

  it('an empty string in an identity string partition is found (Delta reads it back as null); other fields are not its concern', () => {
    const s = spec([[1, 'identity', 'region'], [2, 'identity', 'n'], [5, 'truncate[2]', 'city_trunc']]);
    expect(emptyStringPartition(s, schema, [file({ region: 'eu', n: 1, city_trunc: '' }), file({ region: null, n: 2, city_trunc: 'x' })])).toBeUndefined();
    expect(emptyStringPartition(s, schema, [file({ region: 'eu', n: 1 }), file({ region: '', n: 2 })])).toEqual({ field: 'region', column: 'region' });
  });
});
