import { describe, expect, test } from 'vitest';
import { parseJson } from '../../../src/core/json.ts';
import { readAvroContainer } from '../../../src/format/iceberg/avro.ts';
import {
  avroCompatibleName,
  decodeManifest,
  encodeManifest,
  inheritFirstRowIds,
  inheritSequenceNumbers,
  partitionType,
  transformResultType,
} from '../../../src/format/iceberg/manifest.ts';
import type { DataFile, ManifestEntry, ManifestFile, PartitionSpec, Schema } from '../../../src/format/iceberg/types.ts';
import { decodeWithAvsc, idsInAvroSchema } from './avsc-reader.ts';

const sync = Uint8Array.from({ length: 16 }, (_, i) => i * 7);

const schema: Schema = {
  type: 'struct',
  'schema-id': 3,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'ts', required: false, type: 'timestamptz' },
    { id: 3, name: 'name', required: false, type: 'string' },
    { id: 4, name: 'price', required: false, type: 'decimal(9,2)' },
    { id: 5, name: 'key', required: false, type: 'uuid' },
    { id: 6, name: 'n', required: false, type: 'int' },
    { id: 7, name: 'tags', required: false, type: { type: 'list', 'element-id': 8, element: 'string', 'element-required': false } },
  ],
};

const spec: PartitionSpec = {
  'spec-id': 2,
  fields: [
    { 'source-id': 1, 'field-id': 1000, name: 'id_bucket', transform: 'bucket[16]' },
    { 'source-id': 2, 'field-id': 1001, name: 'ts_day', transform: 'day' },
    { 'source-id': 3, 'field-id': 1002, name: 'name.trunc', transform: 'truncate[4]' },
    { 'source-id': 4, 'field-id': 1003, name: 'price', transform: 'identity' },
    { 'source-id': 5, 'field-id': 1004, name: 'key', transform: 'identity' },
    { 'source-id': 6, 'field-id': 1005, name: 'n_void', transform: 'void' },
    { 'source-id': 2, 'field-id': 1006, name: 'ts_hour', transform: 'hour' },
  ],
};

const bigSnapshot = 9007199254740993n * 1000n + 7n; // > 2^53

function dataFile(path: string, partition: Record<string, unknown>, extra: Partial<DataFile> = {}): DataFile {
  return {
    content: 0,
    'file-path': path,
    'file-format': 'PARQUET',
    partition,
    'record-count': 100,
    'file-size-in-bytes': 4096,
    'spec-id': 2,
    ...extra,
  };
}

const entries: ManifestEntry[] = [
  {
    status: 1,
    'data-file': dataFile(
      's3://b/t/data/a.parquet',
      { id_bucket: 5, ts_day: 19500, 'name.trunc': 'abcd', price: '-1.50', key: '12151fd2-7586-11e9-8f9e-2a86e4085a59', n_void: null, ts_hour: 468000 },
      {
        'column-sizes': new Map([[1, 100], [3, 300]]),
        'value-counts': new Map([[1, 100], [3, 100]]),
        'null-value-counts': new Map([[1, 0], [3, 4]]),
        'nan-value-counts': new Map(),
        'lower-bounds': new Map([[1, Uint8Array.from([1, 0, 0, 0, 0, 0, 0, 0])]]),
        'upper-bounds': new Map([[1, Uint8Array.from([9, 0, 0, 0, 0, 0, 0, 0])]]),
        'split-offsets': [4],
        'sort-order-id': 0,
      },
    ),
  },
  {
    status: 0,
    'snapshot-id': bigSnapshot,
    'sequence-number': 4,
    'file-sequence-number': 5,
    'data-file': dataFile('s3://b/t/data/b.parquet', { id_bucket: null, ts_day: null, 'name.trunc': null, price: '0.07', key: null, n_void: null, ts_hour: null }, {
      'key-metadata': Uint8Array.from([0xde, 0xad]),
    }),
  },
  {
    status: 2,
    'snapshot-id': bigSnapshot + 1n,
    'sequence-number': 1,
    'file-sequence-number': 1,
    'data-file': dataFile('s3://b/t/data/c.parquet', { id_bucket: 15, ts_day: -3, 'name.trunc': '', price: '12345.67', key: null, n_void: null, ts_hour: -1 }),
  },
];

describe('partition types', () => {
  test('transform result types follow spec §Partition Transforms', () => {
    expect(transformResultType('identity', 'decimal(9,2)')).toBe('decimal(9, 2)');
    expect(transformResultType('truncate[4]', 'string')).toBe('string');
    expect(transformResultType('bucket[16]', 'string')).toBe('int');
    expect(transformResultType('year', 'timestamp')).toBe('int');
    expect(transformResultType('month', 'date')).toBe('int');
    expect(transformResultType('hour', 'timestamptz')).toBe('int');
    expect(transformResultType('day', 'timestamptz')).toBe('date');
    expect(transformResultType('void', 'uuid')).toBe('uuid');
    expect(() => transformResultType('zorder', 'int')).toThrow(expect.objectContaining({ kind: 'unsupported' }));
  });

  test('the partition struct carries the partition field IDs and names', () => {
    const p = partitionType(spec, schema);
    expect(p.fields.map((f) => [f.id, f.name, f.type, f.required])).toEqual([
      [1000, 'id_bucket', 'int', false],
      [1001, 'ts_day', 'date', false],
      [1002, 'name.trunc', 'string', false],
      [1003, 'price', 'decimal(9, 2)', false],
      [1004, 'key', 'uuid', false],
      [1005, 'n_void', 'int', false],
      [1006, 'ts_hour', 'int', false],
    ]);
    expect(() => partitionType({ 'spec-id': 0, fields: [{ 'source-id': 99, 'field-id': 1000, name: 'x', transform: 'identity' }] }, schema)).toThrow(/source-id 99/);
  });

  test('names that are not valid Avro names are made compatible as Java does', () => {
    expect(avroCompatibleName('ok_name1')).toBe('ok_name1');
    expect(avroCompatibleName('name.trunc')).toBe('name_x2Etrunc');
    expect(avroCompatibleName('1st')).toBe('_1st');
    expect(avroCompatibleName('a b')).toBe('a_x20b');
  });
});

describe('manifest v2', () => {
  const bytes = encodeManifest({ formatVersion: 2, schema, spec, content: 0, entries, syncMarker: sync, codec: 'deflate' });

  test('round trip: entries decode to what was written, spec-id filled', () => {
    const decoded = decodeManifest(bytes);
    expect(decoded.formatVersion).toBe(2);
    expect(decoded.specId).toBe(2);
    expect(decoded.content).toBe(0);
    expect(decoded.schema).toEqual(schema);
    expect(decoded.partitionFields).toEqual(spec.fields);
    expect(decoded.entries).toEqual(entries);
    expect(decoded.entries[1]!['snapshot-id']).toBe(bigSnapshot);
    expect(decoded.entries[0]!['snapshot-id']).toBeUndefined();
  });

  test('key-value metadata holds what spec §Manifests requires', () => {
    const { metadata } = readAvroContainer(bytes);
    expect(parseJson(metadata.schema!)).toEqual(schema);
    expect(metadata['schema-id']).toBe('3');
    expect(parseJson(metadata['partition-spec']!)).toEqual(spec.fields);
    expect(metadata['partition-spec-id']).toBe('2');
    expect(metadata['format-version']).toBe('2');
    expect(metadata.content).toBe('data');
    expect(metadata['avro.codec']).toBe('deflate');
  });

  test("the written avro.schema has every field ID of spec's manifest tables", async () => {
    const { schemaJson } = await decodeWithAvsc(bytes);
    const ids = idsInAvroSchema(schemaJson);
    const expected: Record<number, string> = {
      0: 'status', 1: 'snapshot_id', 3: 'sequence_number', 4: 'file_sequence_number', 2: 'data_file',
      134: 'data_file.content', 100: 'data_file.file_path', 101: 'data_file.file_format', 102: 'data_file.partition',
      103: 'data_file.record_count', 104: 'data_file.file_size_in_bytes', 108: 'data_file.column_sizes',
      117: 'data_file.column_sizes.key', 118: 'data_file.column_sizes.value', 109: 'data_file.value_counts',
      119: 'data_file.value_counts.key', 120: 'data_file.value_counts.value', 110: 'data_file.null_value_counts',
      121: 'data_file.null_value_counts.key', 122: 'data_file.null_value_counts.value', 137: 'data_file.nan_value_counts',
      138: 'data_file.nan_value_counts.key', 139: 'data_file.nan_value_counts.value', 125: 'data_file.lower_bounds',
      126: 'data_file.lower_bounds.key', 127: 'data_file.lower_bounds.value', 128: 'data_file.upper_bounds',
      129: 'data_file.upper_bounds.key', 130: 'data_file.upper_bounds.value', 131: 'data_file.key_metadata',
      132: 'data_file.split_offsets', 133: 'data_file.split_offsets.element', 135: 'data_file.equality_ids',
      136: 'data_file.equality_ids.element', 140: 'data_file.sort_order_id', 143: 'data_file.referenced_data_file',
      1000: 'data_file.partition.id_bucket', 1001: 'data_file.partition.ts_day', 1002: 'data_file.partition.name_x2Etrunc',
      1003: 'data_file.partition.price', 1004: 'data_file.partition.key', 1005: 'data_file.partition.n_void', 1006: 'data_file.partition.ts_hour',
    };
    expect(Object.fromEntries(ids)).toEqual(expected);
    // v2 writes no v1-only fields and no v3 fields.
    expect(ids.has(105)).toBe(false);
    expect(ids.has(142)).toBe(false);
  });

  test('an independent reader (avsc BlockDecoder) sees the same records, in the Avro types of Appendix A', async () => {
    const { records, schemaJson } = await decodeWithAvsc(bytes);
    expect(records.length).toBe(3);
    expect(records[1].snapshot_id).toBe(bigSnapshot.toString());
    expect(records[0].snapshot_id).toBeNull();
    expect(records[1].sequence_number).toBe('4');
    const part = records[0].data_file.partition;
    expect(part.id_bucket).toBe(5);
    expect(part.ts_day).toBe(19500);
    expect(part.name_x2Etrunc).toBe('abcd');
    // decimal(9,2) is a 4-byte fixed holding the unscaled value in two's complement: -150.
    expect([...part.price]).toEqual([0xff, 0xff, 0xff, 0x6a]);
    expect(Buffer.from(part.key).toString('hex')).toBe('12151fd2758611e98f9e2a86e4085a59');
    expect(records[0].data_file.column_sizes).toEqual([{ key: 1, value: '100' }, { key: 3, value: '300' }]);
    const partSchema = schemaJson.fields[4].type.fields.find((f: any) => f.name === 'partition').type;
    const priceType = partSchema.fields.find((f: any) => f.name === 'price').type[1];
    expect(priceType).toMatchObject({ type: 'fixed', size: 4, logicalType: 'decimal', precision: 9, scale: 2 });
    const dayType = partSchema.fields.find((f: any) => f.name === 'ts_day').type[1];
    expect(dayType).toEqual({ type: 'int', logicalType: 'date' });
  });

  test('ADDED entries may omit sequence numbers; EXISTING/DELETED may not', () => {
    const bad: ManifestEntry = { ...entries[1]!, 'sequence-number': undefined };
    expect(() => encodeManifest({ formatVersion: 2, schema, spec, content: 0, entries: [bad], syncMarker: sync, codec: 'null' })).toThrow(
      /explicit sequence numbers/,
    );
  });

  test('partition values must fit their types', () => {
    const withValue = (price: unknown) => [{ ...entries[0]!, 'data-file': { ...entries[0]!['data-file'], partition: { ...entries[0]!['data-file'].partition, price } } }];
    const encode = (e: ManifestEntry[]) => encodeManifest({ formatVersion: 2, schema, spec, content: 0, entries: e, syncMarker: sync, codec: 'null' });
    expect(() => encode(withValue('1.234'))).toThrow(expect.objectContaining({ kind: 'invalid-input' })); // scale 3 > 2
    expect(() => encode(withValue('12345678.00'))).toThrow(/not a valid decimal/); // precision 10 > 9
    expect(() => encode(withValue(1.5))).toThrow(/partition price/);
    // The unscaled value as a bigint is accepted as well.
    const decoded = decodeManifest(encode(withValue(-7n)));
    expect(decoded.entries[0]!['data-file'].partition.price).toBe('-0.07');
  });

  test('two partition fields of the same fixed type share one named Avro type', async () => {
    const twice: PartitionSpec = {
      'spec-id': 5,
      fields: [
        { 'source-id': 4, 'field-id': 1000, name: 'p1', transform: 'identity' },
        { 'source-id': 4, 'field-id': 1001, name: 'p2', transform: 'truncate[10]' },
        { 'source-id': 5, 'field-id': 1002, name: 'k1', transform: 'identity' },
        { 'source-id': 5, 'field-id': 1003, name: 'k2', transform: 'void' },
      ],
    };
    const e: ManifestEntry = { status: 1, 'data-file': dataFile('x', { p1: '1.00', p2: '-3.10', k1: 'ffffffff-0000-0000-0000-000000000001', k2: null }, { 'spec-id': 5 }) };
    const b = encodeManifest({ formatVersion: 2, schema, spec: twice, content: 0, entries: [e], syncMarker: sync, codec: 'null' });
    const { schemaJson, records } = await decodeWithAvsc(b);
    const fields = schemaJson.fields[4].type.fields.find((f: any) => f.name === 'partition').type.fields;
    expect(fields[0].type[1]).toMatchObject({ type: 'fixed', name: 'decimal_9_2' });
    expect(fields[1].type[1]).toBe('decimal_9_2');
    expect(fields[3].type[1]).toBe('uuid_fixed');
    expect([...records[0].data_file.partition.p2]).toEqual([0xff, 0xff, 0xfe, 0xca]); // -310
    expect(decodeManifest(b).entries).toEqual([e]);
  });

  test('a delete manifest records content "deletes" and equality IDs survive', () => {
    const del: ManifestEntry = {
      status: 1,
      'data-file': dataFile('s3://b/t/data/eq.parquet', { id_bucket: 1, ts_day: 1, 'name.trunc': 'a', price: '1.00', key: null, n_void: null, ts_hour: 1 }, {
        content: 2,
        'equality-ids': [1, 3],
        'referenced-data-file': 's3://b/t/data/a.parquet',
      }),
    };
    const b = encodeManifest({ formatVersion: 2, schema, spec, content: 1, entries: [del], syncMarker: sync, codec: 'null' });
    expect(readAvroContainer(b).metadata.content).toBe('deletes');
    const decoded = decodeManifest(b);
    expect(decoded.content).toBe(1);
    expect(decoded.entries).toEqual([del]);
  });
});

describe('manifest v1 and v3', () => {
  const unpartitioned: PartitionSpec = { 'spec-id': 0, fields: [] };

  test('v1: block_size_in_bytes written, no content or sequence numbers; they read back as absent', async () => {
    const e: ManifestEntry = { status: 1, 'snapshot-id': 42n, 'data-file': { ...dataFile('f.parquet', {}), 'spec-id': 0 } };
    const b = encodeManifest({ formatVersion: 1, schema, spec: unpartitioned, content: 0, entries: [e], syncMarker: sync, codec: 'null' });
    const { records, schemaJson, metadata } = await decodeWithAvsc(b);
    expect(records[0].data_file.block_size_in_bytes).toBe(String(64 * 1024 * 1024));
    expect(records[0].snapshot_id).toBe('42');
    const ids = idsInAvroSchema(schemaJson);
    expect(ids.has(134)).toBe(false);
    expect(ids.has(3)).toBe(false);
    expect(metadata.content).toBeUndefined();
    const decoded = decodeManifest(b);
    expect(decoded.formatVersion).toBe(1);
    expect(decoded.entries).toEqual([e]);
    expect(() => encodeManifest({ formatVersion: 1, schema, spec: unpartitioned, content: 0, entries: [{ ...e, 'snapshot-id': undefined }], syncMarker: sync, codec: 'null' })).toThrow(
      /v1 manifests need a snapshot-id/,
    );
  });

  test('v3: first_row_id and deletion-vector fields', async () => {
    const dv: ManifestEntry = {
      status: 1,
      'data-file': {
        ...dataFile('s3://b/t/data/dv.puffin', {}),
        'spec-id': 0,
        content: 1,
        'file-format': 'PUFFIN',
        'referenced-data-file': 's3://b/t/data/a.parquet',
        'content-offset': 4,
        'content-size-in-bytes': 40,
      },
    };
    const data: ManifestEntry = { status: 0, 'snapshot-id': 1n, 'sequence-number': 1, 'file-sequence-number': 1, 'data-file': { ...dataFile('a', {}), 'spec-id': 0, 'first-row-id': 1000 } };
    const b = encodeManifest({ formatVersion: 3, schema, spec: unpartitioned, content: 0, entries: [data, dv], syncMarker: sync, codec: 'null' });
    const ids = idsInAvroSchema((await decodeWithAvsc(b)).schemaJson);
    for (const id of [142, 143, 144, 145]) expect(ids.has(id)).toBe(true);
    const decoded = decodeManifest(b);
    expect(decoded.formatVersion).toBe(3);
    expect(decoded.entries).toEqual([data, dv]);
  });
});

describe('inheritance', () => {
  const listEntry: ManifestFile = {
    'manifest-path': 'm.avro',
    'manifest-length': 1,
    'partition-spec-id': 0,
    content: 0,
    'sequence-number': 9,
    'min-sequence-number': 3,
    'added-snapshot-id': bigSnapshot,
    'added-files-count': 2,
    'existing-files-count': 1,
    'deleted-files-count': 1,
    'added-rows-count': 30,
    'existing-rows-count': 5,
    'deleted-rows-count': 7,
  };
  const f = (path: string, rows: number, extra: Partial<DataFile> = {}) => ({ ...dataFile(path, {}), 'record-count': rows, 'spec-id': 0, ...extra });

  test('ADDED entries inherit snapshot ID and both sequence numbers; others keep theirs', () => {
    const input: ManifestEntry[] = [
      { status: 1, 'data-file': f('a', 10) },
      { status: 1, 'sequence-number': 2, 'data-file': f('b', 20) }, // explicit data sequence number is kept
      { status: 0, 'snapshot-id': 5n, 'sequence-number': 3, 'file-sequence-number': 4, 'data-file': f('c', 5) },
    ];
    const out = inheritSequenceNumbers(input, listEntry);
    expect(out.map((e) => [e['snapshot-id'], e['sequence-number'], e['file-sequence-number']])).toEqual([
      [bigSnapshot, 9, 9],
      [bigSnapshot, 2, 9],
      [5n, 3, 4],
    ]);
    expect(input[0]!['sequence-number']).toBeUndefined(); // pure
  });

  test('a v1 manifest (listed with sequence number 0) gives every entry sequence number 0', () => {
    const v1List = { ...listEntry, 'sequence-number': 0, 'min-sequence-number': 0 };
    const out = inheritSequenceNumbers([{ status: 0, 'snapshot-id': 5n, 'data-file': f('c', 5) }, { status: 1, 'snapshot-id': 6n, 'data-file': f('d', 5) }], v1List);
    expect(out.map((e) => [e['sequence-number'], e['file-sequence-number']])).toEqual([
      [0, 0],
      [0, 0],
    ]);
  });

  test('first row IDs: assigned in order to data files without one, skipping deleted entries', () => {
    const input: ManifestEntry[] = [
      { status: 1, 'data-file': f('a', 10) },
      { status: 2, 'snapshot-id': 1n, 'sequence-number': 1, 'file-sequence-number': 1, 'data-file': f('gone', 7) },
      { status: 0, 'snapshot-id': 1n, 'sequence-number': 1, 'file-sequence-number': 1, 'data-file': f('kept', 5, { 'first-row-id': 3 }) },
      { status: 1, 'data-file': f('b', 20) },
    ];
    const out = inheritFirstRowIds(input, { ...listEntry, 'first-row-id': 100 });
    expect(out.map((e) => e['data-file']['first-row-id'])).toEqual([100, undefined, 3, 110]);
    expect(inheritFirstRowIds(input, listEntry).map((e) => e['data-file']['first-row-id'])).toEqual([undefined, undefined, 3, undefined]);
  });
});
