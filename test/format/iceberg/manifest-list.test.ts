import { describe, expect, test } from 'vitest';
import { writeAvroContainer } from '../../../src/format/iceberg/avro.ts';
import { decodeManifestList, encodeManifestList, partitionSummaries } from '../../../src/format/iceberg/manifest-list.ts';
import type { ManifestFile } from '../../../src/format/iceberg/types.ts';
import { decodeWithAvsc, idsInAvroSchema } from './avsc-reader.ts';

const sync = Uint8Array.from({ length: 16 }, (_, i) => 255 - i);
const snapshotId = 2n ** 63n - 25n; // the largest kind of ID Java generates
const parentId = 4611686018427387904n + 3n;

const manifests: ManifestFile[] = [
  {
    'manifest-path': 's3://b/t/metadata/m1.avro',
    'manifest-length': 6021,
    'partition-spec-id': 1,
    content: 0,
    'sequence-number': 12,
    'min-sequence-number': 3,
    'added-snapshot-id': snapshotId,
    'added-files-count': 2,
    'existing-files-count': 7,
    'deleted-files-count': 0,
    'added-rows-count': 2000,
    'existing-rows-count': 70000,
    'deleted-rows-count': 0,
    partitions: [
      { 'contains-null': true, 'contains-nan': false, 'lower-bound': Uint8Array.from([1, 0, 0, 0]), 'upper-bound': Uint8Array.from([9, 0, 0, 0]) },
      { 'contains-null': false },
    ],
  },
  {
    'manifest-path': 's3://b/t/metadata/m2.avro',
    'manifest-length': 999,
    'partition-spec-id': 0,
    content: 1,
    'sequence-number': 11,
    'min-sequence-number': 11,
    'added-snapshot-id': parentId,
    'added-files-count': 0,
    'existing-files-count': 1,
    'deleted-files-count': 1,
    'added-rows-count': 0,
    'existing-rows-count': 4,
    'deleted-rows-count': 5,
    'key-metadata': Uint8Array.from([7, 7]),
  },
];

describe('manifest list', () => {
  const bytes = encodeManifestList({ formatVersion: 2, snapshotId, parentSnapshotId: parentId, sequenceNumber: 12, manifests, syncMarker: sync, codec: 'deflate' });

  test('round trip keeps 64-bit snapshot IDs exact', () => {
    expect(decodeManifestList(bytes)).toEqual(manifests);
  });

  test('metadata and field IDs, read by avsc', async () => {
    const { metadata, schemaJson, records } = await decodeWithAvsc(bytes);
    expect(metadata['snapshot-id']).toBe(snapshotId.toString());
    expect(metadata['parent-snapshot-id']).toBe(parentId.toString());
    expect(metadata['sequence-number']).toBe('12');
    expect(metadata['format-version']).toBe('2');
    const ids = idsInAvroSchema(schemaJson);
    expect(Object.fromEntries(ids)).toEqual({
      500: 'manifest_path', 501: 'manifest_length', 502: 'partition_spec_id', 517: 'content', 515: 'sequence_number',
      516: 'min_sequence_number', 503: 'added_snapshot_id', 504: 'added_files_count', 505: 'existing_files_count',
      506: 'deleted_files_count', 512: 'added_rows_count', 513: 'existing_rows_count', 514: 'deleted_rows_count',
      507: 'partitions', 508: 'partitions.element', 509: 'partitions.contains_null', 518: 'partitions.contains_nan',
      510: 'partitions.lower_bound', 511: 'partitions.upper_bound', 519: 'key_metadata',
    });
    expect(records[0].added_snapshot_id).toBe(snapshotId.toString());
    expect(records[1].content).toBe(1);
    expect(records[0].partitions[1]).toEqual({ contains_null: false, contains_nan: null, lower_bound: null, upper_bound: null });
  });

  test('a first snapshot has parent-snapshot-id "null", as Java writes it', async () => {
    const b = encodeManifestList({ formatVersion: 2, snapshotId, sequenceNumber: 1, manifests: [], syncMarker: sync, codec: 'null' });
    expect((await decodeWithAvsc(b)).metadata['parent-snapshot-id']).toBe('null');
    expect(decodeManifestList(b)).toEqual([]);
  });

  test('v3 adds first_row_id (field 520) and the first-row-id metadata', async () => {
    const withRowIds = manifests.map((m, i) => (i === 0 ? { ...m, 'first-row-id': 500 } : m));
    const b = encodeManifestList({ formatVersion: 3, snapshotId, sequenceNumber: 12, firstRowId: 500, manifests: withRowIds, syncMarker: sync, codec: 'null' });
    const { metadata, schemaJson } = await decodeWithAvsc(b);
    expect(metadata['first-row-id']).toBe('500');
    expect(idsInAvroSchema(schemaJson).get(520)).toBe('first_row_id');
    expect(decodeManifestList(b)).toEqual(withRowIds);
  });

  test('v1 lists: no content or sequence numbers; they read back with the spec defaults (0)', async () => {
    const data = manifests.filter((m) => m.content === 0);
    const b = encodeManifestList({ formatVersion: 1, snapshotId, sequenceNumber: 0, manifests: data, syncMarker: sync, codec: 'null' });
    const { schemaJson, metadata } = await decodeWithAvsc(b);
    expect(metadata['sequence-number']).toBeUndefined();
    expect(schemaJson.fields.map((f: any) => f.name)).toContain('added_data_files_count');
    expect(idsInAvroSchema(schemaJson).has(515)).toBe(false);
    expect(decodeManifestList(b)).toEqual(data.map((m) => ({ ...m, 'sequence-number': 0, 'min-sequence-number': 0 })));
    expect(() => encodeManifestList({ formatVersion: 1, snapshotId, sequenceNumber: 0, manifests, syncMarker: sync, codec: 'null' })).toThrow(/data manifests only/);
  });

  test('fields are found by ID even when a writer names them differently', () => {
    const schemaJson = {
      type: 'record',
      name: 'manifest_file',
      fields: [
        { name: 'path', type: 'string', 'field-id': 500 },
        { name: 'len', type: 'long', 'field-id': 501 },
        { name: 'spec', type: 'int', 'field-id': 502 },
        { name: 'snap', type: 'long', 'field-id': 503 },
        { name: 'added', type: ['null', 'int'], default: null, 'field-id': 504 },
      ],
    };
    const b = writeAvroContainer({ schemaJson, records: [{ path: 'p', len: 5n, spec: 3, snap: snapshotId, added: 4 }], metadata: {}, codec: 'null', syncMarker: sync });
    const [m] = decodeManifestList(b);
    expect(m).toMatchObject({ 'manifest-path': 'p', 'manifest-length': 5, 'partition-spec-id': 3, 'added-snapshot-id': snapshotId, 'added-files-count': 4, content: 0 });
  });

  test('a list without a manifest path is data-invalid', () => {
    const schemaJson = { type: 'record', name: 'manifest_file', fields: [{ name: 'manifest_length', type: 'long', 'field-id': 501 }] };
    const b = writeAvroContainer({ schemaJson, records: [{ manifest_length: 1n }], metadata: {}, codec: 'null', syncMarker: sync });
    expect(() => decodeManifestList(b)).toThrow(expect.objectContaining({ kind: 'data-invalid' }));
  });
});

describe('partitionSummaries', () => {
  const le32 = (n: number) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setInt32(0, n, true);
    return b;
  };
  const f64 = (n: number) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, n, true);
    return b;
  };
  const ptype = {
    type: 'struct' as const,
    fields: [
      { id: 1000, name: 'day', required: false, type: 'date' },
      { id: 1001, name: 'x', required: false, type: 'double' },
      { id: 1002, name: 's', required: false, type: 'string' },
      { id: 1003, name: 'd', required: false, type: 'decimal(9, 2)' },
      { id: 1004, name: 'u', required: false, type: 'uuid' },
      { id: 1005, name: 'none', required: false, type: 'long' },
    ],
  };

  test('nulls, NaNs and bounds per field, in Appendix D binary form', () => {
    const u = '12151fd2-7586-11e9-8f9e-2a86e4085a59';
    const out = partitionSummaries(ptype, [
      { day: 19000, x: 0, s: 'b', d: '10.00', u, none: null },
      { day: -5, x: NaN, s: 'é', d: '-0.50', u, none: null },
      { day: null, x: -0, s: 'ab', d: '2.25', u: null, none: null },
    ]);
    expect(out[0]).toEqual({ 'contains-null': true, 'contains-nan': false, 'lower-bound': le32(-5), 'upper-bound': le32(19000) });
    // -0.0 sorts before +0.0: the lower bound is -0.0, the upper +0.0; NaN is flagged, not a bound.
    expect(out[1]).toEqual({ 'contains-null': false, 'contains-nan': true, 'lower-bound': f64(-0), 'upper-bound': f64(0) });
    // Strings compare by code point: 'é' (U+00E9) sorts after 'b'.
    expect(out[2]!['lower-bound']).toEqual(new TextEncoder().encode('ab'));
    expect(out[2]!['upper-bound']).toEqual(new TextEncoder().encode('é'));
    // Decimals compare by value, not text; bounds are minimal two's complement of the unscaled value.
    expect(out[3]!['lower-bound']).toEqual(Uint8Array.from([0xce])); // -50
    expect(out[3]!['upper-bound']).toEqual(Uint8Array.from([0x03, 0xe8])); // 1000
    expect(out[4]).toEqual({ 'contains-null': true, 'contains-nan': false });
    expect(out[5]).toEqual({ 'contains-null': true, 'contains-nan': false });
  });

  test('an unpartitioned manifest has no summaries', () => {
    expect(partitionSummaries({ type: 'struct', fields: [] }, [{}, {}])).toEqual([]);
  });
});
