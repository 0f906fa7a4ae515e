import { describe, expect, test } from 'vitest';
import { parseJson, stringifyJson } from '../../../src/core/json.ts';
import {
  ancestors,
  currentSchema,
  currentSnapshot,
  newTableMetadata,
  parseTableMetadata,
  schemaById,
  serializeTableMetadata,
  snapshotAsOf,
  snapshotById,
  specById,
  tableMetadataToJson,
} from '../../../src/format/iceberg/table-metadata.ts';
import type { Schema, Snapshot, TableMetadata } from '../../../src/format/iceberg/types.ts';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: false, type: 'long' }] };

/** A v1 file as old Java and Hive wrote them: deprecated schema/partition-spec only, -1 current snapshot. */
const v1Text = `{
  "format-version" : 1,
  "location" : "s3://bucket/db/t",
  "last-updated-ms" : 1600000000000,
  "last-column-id" : 2,
  "schema" : { "type" : "struct", "fields" : [ { "id" : 1, "name" : "id", "required" : true, "type" : "long" },
                                              { "id" : 2, "name" : "d", "required" : false, "type" : "date" } ] },
  "partition-spec" : [ { "name" : "d_day", "transform" : "day", "source-id" : 2 } ],
  "properties" : { "owner" : "hive", "n" : 3 },
  "current-snapshot-id" : -1,
  "snapshots" : [ ]
}`;

const S1 = 9007199254740993n; // 2^53 + 1: JSON.parse would round it
const S2 = 8333017788700497002n;
const S3 = 4611686018427387905n;

function v2Table(): string {
  return `{
    "format-version": 2, "table-uuid": "0b1a6c84-5b0a-4c8a-9f61-2b3f1a0e5e9a", "location": "s3://b/t",
    "last-sequence-number": 3, "last-updated-ms": 3000, "last-column-id": 1,
    "current-schema-id": 0, "schemas": [${JSON.stringify(schema)}],
    "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}], "last-partition-id": 999,
    "default-sort-order-id": 0, "sort-orders": [{"order-id": 0, "fields": []}],
    "properties": {}, "current-snapshot-id": ${S3},
    "refs": {"main": {"snapshot-id": ${S3}, "type": "branch"}, "audit": {"snapshot-id": ${S1}, "type": "tag"}},
    "snapshots": [
      {"snapshot-id": ${S1}, "sequence-number": 1, "timestamp-ms": 1000, "manifest-list": "s3://b/t/metadata/s1.avro", "summary": {"operation": "append"}, "schema-id": 0},
      {"snapshot-id": ${S2}, "parent-snapshot-id": ${S1}, "sequence-number": 2, "timestamp-ms": 2000, "manifest-list": "s3://b/t/metadata/s2.avro", "summary": {"operation": "append"}},
      {"snapshot-id": ${S3}, "parent-snapshot-id": ${S2}, "sequence-number": 3, "timestamp-ms": 3000, "manifest-list": "s3://b/t/metadata/s3.avro", "summary": {"operation": "overwrite"}}
    ],
    "snapshot-log": [
      {"timestamp-ms": 1000, "snapshot-id": ${S1}},
      {"timestamp-ms": 2000, "snapshot-id": ${S2}},
      {"timestamp-ms": 2500, "snapshot-id": ${S1}},
      {"timestamp-ms": 3000, "snapshot-id": ${S3}}
    ],
    "metadata-log": [{"timestamp-ms": 500, "metadata-file": "s3://b/t/metadata/00000.metadata.json"}],
    "encryption-keys": [{"key-id": "k1", "encrypted-key-metadata": "AA=="}]
  }`;
}

describe('parseTableMetadata', () => {
  test('v1: schema and partition-spec become schemas and partition-specs; defaults filled', () => {
    const m = parseTableMetadata(v1Text);
    expect(m['format-version']).toBe(1);
    expect(m.schemas).toHaveLength(1);
    expect(m.schemas[0]!['schema-id']).toBe(0);
    expect(m['current-schema-id']).toBe(0);
    expect(m['partition-specs']).toEqual([{ 'spec-id': 0, fields: [{ name: 'd_day', transform: 'day', 'source-id': 2, 'field-id': 1000 }] }]);
    expect(m['default-spec-id']).toBe(0);
    expect(m['last-partition-id']).toBe(1000);
    expect(m['sort-orders']).toEqual([{ 'order-id': 0, fields: [] }]);
    expect(m['last-sequence-number']).toBe(0);
    expect(m['current-snapshot-id']).toBeNull();
    expect(m.refs).toEqual({});
    expect(m['snapshot-log']).toEqual([]);
    expect(m['metadata-log']).toEqual([]);
    expect(m.properties).toEqual({ owner: 'hive', n: '3' });
    expect(currentSnapshot(m)).toBeUndefined();
  });

  test('snapshot IDs are exact bigints everywhere', () => {
    const m = parseTableMetadata(v2Table());
    expect(m['current-snapshot-id']).toBe(S3);
    expect(m.snapshots.map((s) => s['snapshot-id'])).toEqual([S1, S2, S3]);
    expect(m.snapshots[1]!['parent-snapshot-id']).toBe(S1);
    expect(m.refs.audit!['snapshot-id']).toBe(S1);
    expect(m['snapshot-log'][2]!['snapshot-id']).toBe(S1);
    expect(typeof m.snapshots[0]!['timestamp-ms']).toBe('number');
  });

  test('a missing main ref is derived from current-snapshot-id', () => {
    const raw = parseJson(v2Table());
    delete raw.refs;
    const m = parseTableMetadata(JSON.stringify(raw, (_k, v) => (typeof v === 'bigint' ? Number(v) : v)).replace(/"current-snapshot-id":\d+/, `"current-snapshot-id":${S2}`));
    expect(m.refs).toEqual({ main: { 'snapshot-id': S2, type: 'branch' } });
  });

  test('errors: unsupported version, dangling current-schema-id, not JSON', () => {
    expect(() => parseTableMetadata(v1Text.replace('"format-version" : 1', '"format-version" : 4'))).toThrow(expect.objectContaining({ kind: 'unsupported' }));
    expect(() => parseTableMetadata(v2Table().replace('"current-schema-id": 0', '"current-schema-id": 3'), 'm.json')).toThrow(
      'iceberg metadata: current-schema-id 3 not in schemas [0] (m.json)',
    );
    expect(() => parseTableMetadata('{"format-version": 2,')).toThrow(expect.objectContaining({ kind: 'data-invalid' }));
  });
});

describe('serializeTableMetadata', () => {
  test('round trip keeps every field, unknown ones included', () => {
    const m = parseTableMetadata(v2Table());
    const text = serializeTableMetadata(m);
    expect(text).toContain(`"current-snapshot-id":${S3}`); // written as a number, exact
    expect(parseTableMetadata(text)).toEqual(m);
    expect(parseJson(text)['encryption-keys']).toEqual([{ 'key-id': 'k1', 'encrypted-key-metadata': 'AA==' }]);
  });

  test('the spliced snapshots and snapshot log read as the whole metadata serialized in one piece, again after a change', () => {
    const m = parseTableMetadata(v2Table());
    const whole = (x: TableMetadata) => stringifyJson(tableMetadataToJson(x));
    expect(serializeTableMetadata(m)).toBe(whole(m));
    // The next commit's metadata shares the earlier snapshots and log entries, whose text is kept.
    const next: TableMetadata = { ...m, 'snapshot-log': [...m['snapshot-log'], { 'timestamp-ms': 4000, 'snapshot-id': S2 }], 'current-snapshot-id': S2 };
    expect(serializeTableMetadata(next)).toBe(whole(next));
    expect(serializeTableMetadata({ ...m, snapshots: [], 'snapshot-log': [] })).toBe(whole({ ...m, snapshots: [], 'snapshot-log': [] }));
  });

  test('v2 writes every required field; no snapshot is -1 in v2 and null in v3', () => {
    const m = newTableMetadata({ location: 's3://b/t/', schema, properties: { a: 'b' }, tableUuid: 'u-1', nowMs: 42, lastColumnId: 1 });
    const json = parseJson(serializeTableMetadata(m));
    for (const key of [
      'format-version', 'table-uuid', 'location', 'last-sequence-number', 'last-updated-ms', 'last-column-id', 'schemas', 'current-schema-id',
      'partition-specs', 'default-spec-id', 'last-partition-id', 'sort-orders', 'default-sort-order-id',
    ]) {
      expect(json, key).toHaveProperty([key]);
    }
    expect(json.location).toBe('s3://b/t');
    expect(json['current-snapshot-id']).toBe(-1);
    expect(json.schema).toBeUndefined();
    expect(json['partition-spec']).toBeUndefined();
    expect(json['next-row-id']).toBeUndefined();

    const v3 = parseJson(serializeTableMetadata(newTableMetadata({ location: 's3://b/t', schema, properties: {}, tableUuid: 'u', nowMs: 1, lastColumnId: 1, formatVersion: 3 })));
    expect(v3['current-snapshot-id']).toBeNull();
    expect(v3['next-row-id']).toBe(0);
  });

  test('v1 files get the deprecated schema and partition-spec, and no sequence numbers', () => {
    const text = serializeTableMetadata(parseTableMetadata(v1Text));
    const json = parseJson(text);
    expect(json.schema.fields.map((f: any) => f.name)).toEqual(['id', 'd']);
    expect(json['partition-spec']).toEqual([{ name: 'd_day', transform: 'day', 'source-id': 2, 'field-id': 1000 }]);
    expect(json['last-sequence-number']).toBeUndefined();
    expect(parseTableMetadata(text)['partition-specs']).toEqual(parseTableMetadata(v1Text)['partition-specs']);
  });
});

describe('newTableMetadata', () => {
  test('an empty table: spec, sort order and ids as given', () => {
    const m = newTableMetadata({
      location: 'file:///tmp/t',
      schema,
      partitionSpec: { 'spec-id': 0, fields: [{ 'source-id': 1, 'field-id': 1000, name: 'id_bucket', transform: 'bucket[8]' }] },
      properties: {},
      tableUuid: 'uuid',
      nowMs: 123,
      lastColumnId: 5,
    });
    expect(m['last-column-id']).toBe(5);
    expect(m['last-partition-id']).toBe(1000);
    expect(m['last-updated-ms']).toBe(123);
    expect(m['current-snapshot-id']).toBeNull();
    expect(m['format-version']).toBe(2);
    expect(currentSchema(m)).toEqual(schema);
    expect(parseTableMetadata(serializeTableMetadata(m))).toEqual(m);
  });
});

describe('lookups', () => {
  const m = parseTableMetadata(v2Table());

  test('by id', () => {
    expect(schemaById(m, 0)).toBe(m.schemas[0]);
    expect(() => schemaById(m, 7)).toThrow(expect.objectContaining({ kind: 'not-found' }));
    expect(specById(m, 0).fields).toEqual([]);
    expect(() => specById(m, 1)).toThrow(/spec-id 1 not in partition-specs \[0\]/);
    expect(snapshotById(m, S2)!['sequence-number']).toBe(2);
    expect(snapshotById(m, 1n)).toBeUndefined();
    expect(currentSnapshot(m)!['snapshot-id']).toBe(S3);
  });

  test('ancestors walk parents newest first and stop at an expired parent', () => {
    expect(ancestors(m, S3).map((s) => s['snapshot-id'])).toEqual([S3, S2, S1]);
    const expired: TableMetadata = { ...m, snapshots: m.snapshots.filter((s) => s['snapshot-id'] !== S1) };
    expect(ancestors(expired, S3).map((s) => s['snapshot-id'])).toEqual([S3, S2]);
    expect(ancestors(m, 5n)).toEqual([]);
  });

  test('snapshotAsOf follows the snapshot log, rollbacks included', () => {
    const at = (t: number) => snapshotAsOf(m, t)?.['snapshot-id'];
    expect(at(999)).toBeUndefined();
    expect(at(1000)).toBe(S1);
    expect(at(2200)).toBe(S2);
    expect(at(2600)).toBe(S1); // rolled back to S1 at 2500
    expect(at(5000)).toBe(S3);
  });

  test('without a snapshot log, snapshotAsOf walks the main lineage', () => {
    const noLog: TableMetadata = { ...m, 'snapshot-log': [] };
    const at = (t: number) => snapshotAsOf(noLog, t)?.['snapshot-id'];
    expect(at(2600)).toBe(S2);
    expect(at(3000)).toBe(S3);
    expect(at(10)).toBeUndefined();
  });

  const snap: Snapshot = m.snapshots[0]!;
  test('snapshot fields survive parsing', () => {
    expect(snap['manifest-list']).toBe('s3://b/t/metadata/s1.avro');
    expect(snap['schema-id']).toBe(0);
    expect(snap['parent-snapshot-id']).toBeUndefined();
  });
});
