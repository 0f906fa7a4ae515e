import { describe, expect, it } from 'vitest';
import { checkDeltaCanHold, checkDeltaPartitioning, checkIdentityUnchanged, emptyStringPartition } from '../../../src/format/dual/delta-partitioning.ts';
import type { DataFile, PartitionSpec, Schema, TableMetadata } from '../../../src/format/iceberg/types.ts';
import { assignPhysicalNames } from '../../../src/format/dual/physical-names.ts';
import { Props, writePhysicalNames } from '../../../src/format/dual/table-properties.ts';
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

describe('checkDeltaCanHold: what version 0 of a table that gains Delta cannot express is refused', () => {
  const flat: Schema = { ...schema, fields: schema.fields.filter((f) => f.id !== 4) };
  // The physical names a table Twinlake keeps records (an adopted one gets them from register).
  const meta = (s: Schema, partition: PartitionSpec) =>
    ({
      schemas: [s],
      'current-schema-id': 0,
      'partition-specs': [partition],
      'default-spec-id': 0,
      properties: { [Props.physicalNames]: writePhysicalNames(assignPhysicalNames(s, new Map())) },
    }) as unknown as TableMetadata;
  const data = (partition: Record<string, unknown>, specId = 0) => ({ content: 0, 'spec-id': specId, partition }) as unknown as DataFile;
  const bySpec = spec([[1, 'identity', 'region']]);

  it('accepts a table Delta can hold, with or without snapshots', () => {
    expect(() => checkDeltaCanHold(meta(flat, bySpec), undefined, 'alter db.t')).not.toThrow();
    expect(() => checkDeltaCanHold(meta(flat, bySpec), { data: [data({ region: 'eu' }), data({ region: null })], deletes: [] }, 'alter db.t')).not.toThrow();
  });

  it('refuses a type without a Delta twin, a nested identity partition, row deletes, an older spec and an empty partition string', () => {
    const withTime: Schema = { ...flat, fields: [...flat.fields, { id: 9, name: 't', required: false, type: 'time' }] };
    expect(thrown(() => checkDeltaCanHold(meta(withTime, bySpec), undefined, 'alter db.t')).message).toMatch(/^delta schema: column t has type time, which has no Delta equivalent/);
    expect(thrown(() => checkDeltaCanHold(meta(schema, spec([[5, 'identity', 'city']])), undefined, 'alter db.t')).message).toMatch(/^partition city: Delta tables can partition by top-level columns only/);
    const deletes = { data: [data({ region: 'eu' })], deletes: [{ content: 1 } as unknown as DataFile] };
    expect(thrown(() => checkDeltaCanHold(meta(flat, bySpec), deletes, 'alter db.t')).message).toBe(
      'alter db.t: adding Delta to a table with row-level deletes (1 delete file(s)) is not supported yet; rewrite them first (copy-on-write)',
    );
    expect(() => checkDeltaCanHold(meta(flat, bySpec), deletes, 'register db.t', { rowDeletes: true })).not.toThrow();
    expect(thrown(() => checkDeltaCanHold(meta(flat, bySpec), { data: [data({}, 1)], deletes: [] }, 'alter db.t')).message).toBe(
      'alter db.t: adding Delta to a table whose files were written with an older partition spec is not supported yet',
    );
    expect(thrown(() => checkDeltaCanHold(meta(flat, bySpec), { data: [data({ region: '' })], deletes: [] }, 'alter db.t')).message).toBe(
      'alter db.t: partition region holds an empty string, which Delta reads back as null; the table cannot keep Delta',
    );
  });
});
