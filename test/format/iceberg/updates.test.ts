import { describe, expect, test } from 'vitest';
import { parseJson, stringifyJson } from '../../../src/core/json.ts';
import { newTableMetadata } from '../../../src/format/iceberg/table-metadata.ts';
import type { Schema, Snapshot, TableMetadata } from '../../../src/format/iceberg/types.ts';
import {
  applyUpdates,
  checkRequirements,
  requirementFromJson,
  requirementToJson,
  updateFromJson,
  updateToJson,
  type TableRequirement,
  type TableUpdate,
} from '../../../src/format/iceberg/updates.ts';

const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: false, type: 'int' }] };
const base = (formatVersion: 2 | 3 = 2): TableMetadata =>
  deepFreeze(newTableMetadata({ location: 's3://b/t', schema, properties: {}, tableUuid: 'AB-12', nowMs: 100, lastColumnId: 1, formatVersion }));

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

const BIG = 2n ** 62n + 99n;
const snap = (id: bigint, seq: number, ts: number, parent?: bigint, extra: Partial<Snapshot> = {}): Snapshot => ({
  'snapshot-id': id,
  ...(parent !== undefined ? { 'parent-snapshot-id': parent } : {}),
  'sequence-number': seq,
  'timestamp-ms': ts,
  'manifest-list': `s3://b/t/metadata/snap-${id}.avro`,
  summary: { operation: 'append' },
  'schema-id': 0,
  ...extra,
});
const commit = (s: Snapshot): TableUpdate[] => [
  { action: 'add-snapshot', snapshot: s },
  { action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': s['snapshot-id'], type: 'branch' },
];

describe('applyUpdates', () => {
  test('an append: snapshot added, main moved, logs and counters updated; base untouched (frozen)', () => {
    const b = base();
    const m = applyUpdates(b, commit(snap(BIG, 1, 5000)), { nowMs: 9000, previousMetadataLocation: 's3://b/t/metadata/00000.metadata.json' });
    expect(m).not.toBe(b);
    expect(m.snapshots.map((s) => s['snapshot-id'])).toEqual([BIG]);
    expect(m['current-snapshot-id']).toBe(BIG);
    expect(m.refs.main).toEqual({ 'snapshot-id': BIG, type: 'branch' });
    expect(m['last-sequence-number']).toBe(1);
    expect(m['last-updated-ms']).toBe(5000); // the snapshot's own time, as Java
    expect(m['snapshot-log']).toEqual([{ 'timestamp-ms': 5000, 'snapshot-id': BIG }]);
    expect(m['metadata-log']).toEqual([{ 'timestamp-ms': 100, 'metadata-file': 's3://b/t/metadata/00000.metadata.json' }]);
    expect(b.snapshots).toEqual([]);
    expect(b['current-snapshot-id']).toBeNull();
  });

  test('the sequence number must grow; snapshot IDs must be new', () => {
    const m = applyUpdates(base(), commit(snap(1n, 1, 10)), { nowMs: 20 });
    expect(() => applyUpdates(m, commit(snap(2n, 1, 30, 1n)), { nowMs: 40 })).toThrow(expect.objectContaining({ kind: 'commit-conflict' }));
    expect(() => applyUpdates(m, commit(snap(1n, 2, 30)), { nowMs: 40 })).toThrow(/snapshot 1 already exists/);
    expect(() => applyUpdates(m, [{ action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': 77n, type: 'branch' }], { nowMs: 40 })).toThrow(/snapshot 77/);
  });

  test('rolling main back to an older snapshot logs it at commit time', () => {
    let m = applyUpdates(base(), commit(snap(1n, 1, 10)), { nowMs: 11 });
    m = applyUpdates(m, commit(snap(2n, 2, 20, 1n)), { nowMs: 21 });
    m = applyUpdates(m, [{ action: 'set-snapshot-ref', 'ref-name': 'main', 'snapshot-id': 1n, type: 'branch' }], { nowMs: 99 });
    expect(m['current-snapshot-id']).toBe(1n);
    expect(m['snapshot-log'].at(-1)).toEqual({ 'timestamp-ms': 99, 'snapshot-id': 1n });
    expect(m['last-updated-ms']).toBe(99);
  });

  test('tags and branches other than main leave the current snapshot alone', () => {
    const m1 = applyUpdates(base(), commit(snap(1n, 1, 10)), { nowMs: 11 });
    const m2 = applyUpdates(m1, [{ action: 'set-snapshot-ref', 'ref-name': 'v1', 'snapshot-id': 1n, type: 'tag', 'max-ref-age-ms': 1000 }], { nowMs: 12 });
    expect(m2.refs.v1).toEqual({ 'snapshot-id': 1n, type: 'tag', 'max-ref-age-ms': 1000 });
    expect(m2['snapshot-log']).toEqual(m1['snapshot-log']);
    const m3 = applyUpdates(m2, [{ action: 'remove-snapshot-ref', 'ref-name': 'v1' }], { nowMs: 13 });
    expect(m3.refs.v1).toBeUndefined();
    expect(m3['current-snapshot-id']).toBe(1n);
  });

  test('schema evolution: add-schema then set-current-schema -1 (the last added)', () => {
    const next: Schema = { type: 'struct', 'schema-id': 1, fields: [...schema.fields, { id: 2, name: 'name', required: false, type: 'string' }] };
    const m = applyUpdates(base(), [{ action: 'add-schema', schema: next }, { action: 'set-current-schema', 'schema-id': -1 }], { nowMs: 50 });
    expect(m['current-schema-id']).toBe(1);
    expect(m['last-column-id']).toBe(2);
    expect(m.schemas).toHaveLength(2);
    expect(m['last-updated-ms']).toBe(50);
    // An identical schema under an existing id is a no-op; a different one is an error.
    expect(applyUpdates(m, [{ action: 'add-schema', schema: next }], { nowMs: 51 }).schemas).toHaveLength(2);
    expect(() => applyUpdates(m, [{ action: 'add-schema', schema: { ...next, fields: schema.fields } }], { nowMs: 51 })).toThrow(/schema-id 1 already exists/);
    expect(() => applyUpdates(base(), [{ action: 'set-current-schema', 'schema-id': -1 }], { nowMs: 1 })).toThrow(/none was added/);
    expect(() => applyUpdates(base(), [{ action: 'set-current-schema', 'schema-id': 5 }], { nowMs: 1 })).toThrow(/schema-id 5 not in schemas \[0\]/);
  });

  test('partition specs and sort orders', () => {
    const m = applyUpdates(
      base(),
      [
        { action: 'add-spec', spec: { 'spec-id': 1, fields: [{ 'source-id': 1, 'field-id': 1000, name: 'id_b', transform: 'bucket[4]' }] } },
        { action: 'set-default-spec', 'spec-id': -1 },
        { action: 'add-sort-order', 'sort-order': { 'order-id': 1, fields: [{ transform: 'identity', 'source-id': 1, direction: 'asc', 'null-order': 'nulls-first' }] } },
        { action: 'set-default-sort-order', 'sort-order-id': -1 },
      ],
      { nowMs: 5 },
    );
    expect(m['default-spec-id']).toBe(1);
    expect(m['last-partition-id']).toBe(1000);
    expect(m['default-sort-order-id']).toBe(1);
    expect(() => applyUpdates(m, [{ action: 'remove-partition-specs', 'spec-ids': [1] }], { nowMs: 6 })).toThrow(/default spec/);
    expect(applyUpdates(m, [{ action: 'remove-partition-specs', 'spec-ids': [0] }], { nowMs: 6 })['partition-specs'].map((s) => s['spec-id'])).toEqual([1]);
  });

  test('properties, location, uuid, format version', () => {
    let m = applyUpdates(base(), [{ action: 'set-properties', updates: { a: '1', b: '2' } }, { action: 'remove-properties', removals: ['a'] }], { nowMs: 1 });
    expect(m.properties).toEqual({ b: '2' });
    m = applyUpdates(m, [{ action: 'set-location', location: 's3://c/t/' }, { action: 'assign-uuid', uuid: 'ab-12' }], { nowMs: 2 });
    expect(m.location).toBe('s3://c/t');
    expect(() => applyUpdates(m, [{ action: 'assign-uuid', uuid: 'other' }], { nowMs: 3 })).toThrow(/already has uuid/);
    expect(() => applyUpdates(m, [{ action: 'upgrade-format-version', 'format-version': 1 }], { nowMs: 3 })).toThrow(/cannot downgrade/);
    expect(() => applyUpdates(m, [{ action: 'upgrade-format-version', 'format-version': 4 }], { nowMs: 3 })).toThrow(expect.objectContaining({ kind: 'unsupported' }));
    const v3 = applyUpdates(m, [{ action: 'upgrade-format-version', 'format-version': 3 }], { nowMs: 3 });
    expect(v3['format-version']).toBe(3);
    expect(v3['next-row-id']).toBe(0);
  });

  test('v3 snapshots must start at next-row-id, which grows by added-rows', () => {
    const m = applyUpdates(base(3), commit(snap(1n, 1, 10, undefined, { 'first-row-id': 0, 'added-rows': 25 })), { nowMs: 11 });
    expect(m['next-row-id']).toBe(25);
    expect(() => applyUpdates(m, commit(snap(2n, 2, 20, 1n, { 'first-row-id': 10, 'added-rows': 5 })), { nowMs: 21 })).toThrow(/first-row-id must be at least next-row-id 25/);
    expect(() => applyUpdates(m, commit(snap(2n, 2, 20, 1n)), { nowMs: 21 })).toThrow(/needs first-row-id and added-rows/);
  });

  test('remove-snapshots drops their refs, statistics and the snapshot log up to the last removed one', () => {
    let m = base();
    for (let i = 1; i <= 3; i++) m = applyUpdates(m, commit(snap(BigInt(i), i, i * 10, i > 1 ? BigInt(i - 1) : undefined)), { nowMs: i * 10 + 1 });
    m = applyUpdates(
      m,
      [
        { action: 'set-snapshot-ref', 'ref-name': 'old', 'snapshot-id': 1n, type: 'tag' },
        { action: 'set-statistics', statistics: { 'snapshot-id': 1n, 'statistics-path': 's', 'file-size-in-bytes': 1, 'file-footer-size-in-bytes': 1, 'blob-metadata': [] } },
      ],
      { nowMs: 40 },
    );
    const after = applyUpdates(m, [{ action: 'remove-snapshots', 'snapshot-ids': [1n, 2n] }], { nowMs: 50 });
    expect(after.snapshots.map((s) => s['snapshot-id'])).toEqual([3n]);
    expect(after.refs.old).toBeUndefined();
    expect(after.refs.main!['snapshot-id']).toBe(3n);
    expect(after.statistics).toEqual([]);
    expect(after['snapshot-log'].map((e) => e['snapshot-id'])).toEqual([3n]);
  });

  test('the metadata log keeps at most write.metadata.previous-versions-max entries, newest last', () => {
    let m = applyUpdates(base(), [{ action: 'set-properties', updates: { 'write.metadata.previous-versions-max': '3' } }], { nowMs: 1 });
    for (let i = 0; i < 5; i++) {
      m = applyUpdates(m, [{ action: 'set-properties', updates: { i: String(i) } }], { nowMs: 10 + i, previousMetadataLocation: `v${i}.metadata.json` });
    }
    expect(m['metadata-log'].map((e) => e['metadata-file'])).toEqual(['v2.metadata.json', 'v3.metadata.json', 'v4.metadata.json']);
    expect(m['metadata-log'].map((e) => e['timestamp-ms'])).toEqual([11, 12, 13]);
    // Default: 100 entries.
    let d = base();
    for (let i = 0; i < 105; i++) d = applyUpdates(d, [{ action: 'set-properties', updates: { i: String(i) } }], { nowMs: i, previousMetadataLocation: `m${i}` });
    expect(d['metadata-log']).toHaveLength(100);
    expect(d['metadata-log'][0]!['metadata-file']).toBe('m5');
  });

  test('no updates: the base is returned as is', () => {
    const b = base();
    expect(applyUpdates(b, [], { nowMs: 1, previousMetadataLocation: 'x' })).toBe(b);
  });
});

describe('checkRequirements', () => {
  const m = applyUpdates(base(), commit(snap(BIG, 1, 10)), { nowMs: 11 });
  const conflict = (reqs: TableRequirement[], on: TableMetadata | null = m) => {
    try {
      checkRequirements(on ?? undefined, reqs);
    } catch (e: any) {
      expect(e.kind).toBe('commit-conflict');
      expect(e.retryable).toBe(true);
      return e.message as string;
    }
    throw new Error('expected a commit conflict');
  };

  test('requirements that hold pass', () => {
    expect(() =>
      checkRequirements(m, [
        { type: 'assert-table-uuid', uuid: 'ab-12' },
        { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': BIG },
        { type: 'assert-ref-snapshot-id', ref: 'dev', 'snapshot-id': null },
        { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 1 },
        { type: 'assert-current-schema-id', 'current-schema-id': 0 },
        { type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 999 },
        { type: 'assert-default-spec-id', 'default-spec-id': 0 },
        { type: 'assert-default-sort-order-id', 'default-sort-order-id': 0 },
      ]),
    ).not.toThrow();
    expect(() => checkRequirements(undefined, [{ type: 'assert-create' }])).not.toThrow();
  });

  test('each failure names the requirement, what was expected and what was found', () => {
    expect(conflict([{ type: 'assert-create' }])).toBe('iceberg commit: requirement assert-create failed: expected no table, found table AB-12');
    expect(conflict([{ type: 'assert-current-schema-id', 'current-schema-id': 0 }], null)).toMatch(/expected an existing table, found no table/);
    expect(conflict([{ type: 'assert-table-uuid', uuid: 'x' }])).toBe('iceberg commit: requirement assert-table-uuid failed: expected x, found AB-12');
    expect(conflict([{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 5n }])).toBe(
      `iceberg commit: requirement assert-ref-snapshot-id failed: expected ref main at snapshot 5, found snapshot ${BIG}`,
    );
    expect(conflict([{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }])).toMatch(/expected no ref main, found branch main at snapshot/);
    expect(conflict([{ type: 'assert-ref-snapshot-id', ref: 'dev', 'snapshot-id': 5n }])).toMatch(/found no ref dev/);
    expect(conflict([{ type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 3 }])).toMatch(/assert-last-assigned-field-id failed: expected 3, found 1/);
    expect(conflict([{ type: 'assert-current-schema-id', 'current-schema-id': 2 }])).toMatch(/expected 2, found 0/);
    expect(conflict([{ type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': 1000 }])).toMatch(/expected 1000, found 999/);
    expect(conflict([{ type: 'assert-default-spec-id', 'default-spec-id': 1 }])).toMatch(/assert-default-spec-id/);
    expect(conflict([{ type: 'assert-default-sort-order-id', 'default-sort-order-id': 1 }])).toMatch(/assert-default-sort-order-id/);
  });
});

describe('JSON', () => {
  test('updates survive stringify → parse with exact 64-bit IDs', () => {
    const updates: TableUpdate[] = [
      ...commit(snap(BIG, 7, 123, BIG - 1n, { summary: { operation: 'append', 'added-records': '5' } })),
      { action: 'remove-snapshots', 'snapshot-ids': [BIG - 1n, 3n] },
      { action: 'add-schema', schema },
      { action: 'set-current-schema', 'schema-id': -1 },
      { action: 'set-properties', updates: { k: 'v' } },
      { action: 'remove-properties', removals: ['z'] },
      { action: 'remove-statistics', 'snapshot-id': BIG },
    ];
    const text = stringifyJson(updates.map(updateToJson));
    expect(text).toContain(`"snapshot-id":${BIG}`);
    const back = (parseJson(text) as unknown[]).map(updateFromJson);
    expect(back).toEqual(updates);
    expect(() => updateFromJson({ action: 'explode' })).toThrow(expect.objectContaining({ kind: 'unsupported' }));
    expect(() => updateFromJson({ action: 'set-location' })).toThrow(/missing location/);
  });

  test('requirements round trip, null snapshot-id included', () => {
    const reqs: TableRequirement[] = [
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': BIG },
      { type: 'assert-ref-snapshot-id', ref: 'b', 'snapshot-id': null },
      { type: 'assert-create' },
      { type: 'assert-current-schema-id', 'current-schema-id': 3 },
    ];
    const text = stringifyJson(reqs.map(requirementToJson));
    expect(text).toContain('"snapshot-id":null');
    expect((parseJson(text) as unknown[]).map(requirementFromJson)).toEqual(reqs);
    expect(() => requirementFromJson({ type: 'assert-current-schema-id', 'current-schema-id': 'x' })).toThrow(/expected an integer/);
  });
});
