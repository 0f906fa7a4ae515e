import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { stringifyJson } from '../../../src/core/json.ts';
import { addLine, addLineTail, type AddFile, CommitWriter, encodeCommit, parseCommit, serializeCommit } from '../../../src/format/delta/actions.ts';
import { decodePath } from '../../../src/format/delta/replay.ts';
import { protocolFor } from '../../../src/format/delta/schema.ts';
import { toBinary } from '../../../src/format/iceberg/single-value.ts';
import { newTableMetadata, normalizeTableMetadata, snapshotById } from '../../../src/format/iceberg/table-metadata.ts';
import type { DataFile, NestedField, PartitionSpec, Snapshot, TableMetadata } from '../../../src/format/iceberg/types.ts';
import { encodeSnapshotVersion, projectSnapshot, type SnapshotChanges, type SnapshotInput } from '../../../src/format/dual/projection.ts';
import { Props, writePhysicalNames } from '../../../src/format/dual/table-properties.ts';
import { rng as mulberry32 } from '../expressions/random-filters.ts';
import { decodeFixture, parseFixture } from './fixture-json.ts';

/**
 * `encodeSnapshotVersion` writes the commit of a version straight from the data files (the
 * adds of the files a snapshot added never become action objects): its bytes must be exactly
 * those of `serializeCommit(projectSnapshot(…).actions)`, the projection's definition. Checked
 * on the projection fixtures and on random snapshots: paths and partition values that need
 * URI-encoding or JSON escapes, nulls, unicode, longs past 2^53, files outside the table root,
 * deletion vectors (whose adds keep the object path), removes, every operation.
 */

const asText = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
const asBytes = (text: string) => new Uint8Array(Buffer.from(text, 'utf8'));
/** Byte equality without a diff of millions of elements on failure. */
const expectSameBytes = (a: Uint8Array, b: Uint8Array, what = 'bytes') => expect(Buffer.from(a).equals(Buffer.from(b)), what).toBe(true);

describe('encodeSnapshotVersion', () => {
  const dir = join(import.meta.dirname, 'fixtures');
  for (const name of ['append', 'overwrite', 'merge-copy-on-write', 'merge-on-read', 'replace', 'schema-change', 'rename', 'partitioned', 'delta-start']) {
    test(`${name}: the bytes of the fixture's commit`, () => {
      const raw = parseFixture(readFileSync(join(dir, `${name}.json`), 'utf8'), `${name}.json`);
      const metadata = normalizeTableMetadata(raw.metadata, `${name}.json`);
      const snapshot = snapshotById(metadata, BigInt(raw['snapshot-id']))!;
      const follows = decodeFixture(raw.follows);
      const input: SnapshotInput = follows === null ? { metadata, snapshot, follows, live: decodeFixture(raw.live) } : { metadata, snapshot, follows, changes: decodeFixture(raw.changes) };
      const encoded = encodeSnapshotVersion(input);
      const version = projectSnapshot(input);
      expect(asText(encoded.bytes)).toBe(readFileSync(join(dir, `${name}.expected.json`), 'utf8'));
      expectSameBytes(encoded.bytes, asBytes(serializeCommit(version.actions)));
      expect(encoded.version).toBe(version.version);
      expect(encoded.commitInfo).toEqual((version.actions[0] as { commitInfo: unknown }).commitInfo);
    });
  }

  test('random snapshots: the same bytes as serializing the projected actions', () => {
    let lines = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const r = rng(seed);
      const { metadata, snapshot, changes } = randomSnapshot(r);
      const input: SnapshotInput = { metadata, snapshot, follows: { version: 6, schemaId: 0, protocol: protocolFor(metadata.schemas[0]!, { columnMapping: true }) }, changes };
      const text = serializeCommit(projectSnapshot(input).actions);
      const encoded = encodeSnapshotVersion(input);
      expectSameBytes(encoded.bytes, asBytes(text), `seed ${seed}`);
      // What a Delta reader gets back: the files' paths relative to the root (or whole URIs), decoded.
      const adds = parseCommit(asText(encoded.bytes), 'test').flatMap((a) => ('add' in a ? [a.add] : []));
      const addedPaths = changes.added.map((f) => f['file-path']);
      for (const a of adds.slice(-addedPaths.length)) expect(addedPaths).toContain(a.path.includes('://') ? a.path : `${metadata.location}/${decodePath(a.path)}`);
      lines += text.split('\n').length - 1;
    }
    expect(lines).toBeGreaterThan(60 * 20);
  });
});

describe('addLine and CommitWriter', () => {
  test('addLine is the text serializeCommit writes for such an add', () => {
    const r = rng(7);
    for (let k = 0; k < 2000; k++) {
      const add: AddFile = {
        path: r.pick(['a.parquet', 'p=%C3%A9/b%20c.parquet', 's3://other/x y/"q".parquet', 'ü/\u2028/\\', '\ud800x']),
        partitionValues: r.chance(0.5) ? {} : { [r.pick(['p', 'é', '0', '"k"'])]: r.pick([null, '', 'x', '\u0001', '😀', '12']), q: r.pick([null, 'v']) },
        size: r.pick([0, 3, 2 ** 50, 2 ** 53 + 2, NaN, Infinity, -0]),
        modificationTime: r.pick([0, 1700000000000, -1, NaN]),
        dataChange: r.chance(0.5),
        stats: r.pick(['', '{"numRecords":3}', '{"minValues":{"s":"\\"q\\" é 😀\\u0000"}}', '\ud800', 'x'.repeat(300)]),
      };
      const line = addLine(add.path, JSON.stringify(add.partitionValues), add.size, addLineTail(add.modificationTime, add.dataChange), add.stats!);
      expect(line).toBe(stringifyJson({ add }));
      expect(line + '\n').toBe(serializeCommit([{ add }]));
    }
  });

  test('CommitWriter: UTF-8 of every line, across growth, lone surrogates as TextEncoder writes them', () => {
    const w = new CommitWriter();
    const lines: string[] = [];
    const r = rng(11);
    for (let k = 0; k < 3000; k++) {
      const line = Array.from({ length: r.int(0, 400) }, () => r.pick(['a', 'é', '中', '😀', '\ud800', '\udfff', '"', '\n'])).join('');
      lines.push(line);
      w.line(line);
    }
    // One line larger than the buffer has grown to so far.
    const big = '😀'.repeat(200_000);
    lines.push(big);
    w.line(big);
    expectSameBytes(w.bytes(), new TextEncoder().encode(lines.map((l) => l + '\n').join('')));
    const actions = [{ commitInfo: { icebergSnapshotId: 2n ** 62n + 1n, timestamp: 5 } }, { txn: { appId: 'a', version: 2n ** 60n } }];
    expectSameBytes(encodeCommit(actions), asBytes(serializeCommit(actions)));
  });
});

// --- random snapshots --------------------------------------------------------------------------

function rng(seed: number) {
  const next = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  return { next, int, pick, chance: (p: number) => next() < p };
}
type R = ReturnType<typeof rng>;

const FIELDS: NestedField[] = [
  { id: 1, name: 'id', required: false, type: 'long' },
  { id: 2, name: 'region', required: false, type: 'string' },
  { id: 3, name: 'n', required: false, type: 'int' },
  { id: 4, name: 'big', required: false, type: 'long' },
  { id: 5, name: 'amount', required: false, type: 'decimal(10,2)' },
  { id: 6, name: 'd', required: false, type: 'date' },
  { id: 7, name: 'flag', required: false, type: 'boolean' },
  { id: 8, name: 'ts', required: false, type: 'timestamptz' },
  { id: 9, name: 'name', required: false, type: 'string' },
];
const SEGMENTS = ['data', 'a b', 'é', '%41', 'x#y', 'q?=1', '😀', 'p+q', 'ü=ö', '"', 'a\\b', '\u2028', 'plain-1.2_~@,'];
const TEXTS = ['eu', 'us', 'é', '"q"', 'a/b', 'x y', '%', '😀', '\u0001', '中文', '\\'];

function randomSnapshot(r: R): { metadata: TableMetadata; snapshot: Snapshot; changes: SnapshotChanges } {
  const spec: PartitionSpec = {
    'spec-id': 0,
    fields: [
      { 'source-id': 2, 'field-id': 1000, name: 'region', transform: 'identity' },
      { 'source-id': 3, 'field-id': 1001, name: 'n', transform: 'identity' },
      { 'source-id': 4, 'field-id': 1002, name: 'big', transform: 'identity' },
      { 'source-id': 5, 'field-id': 1003, name: 'amount', transform: 'identity' },
      { 'source-id': 6, 'field-id': 1004, name: 'd', transform: 'identity' },
      { 'source-id': 7, 'field-id': 1005, name: 'flag', transform: 'identity' },
      { 'source-id': 8, 'field-id': 1006, name: 'ts_day', transform: 'day' },
    ].filter(() => r.chance(0.6)),
  };
  const location = r.pick(['file:///w/db/t', 's3://bucket/w/t é', 'file:///tmp/x y']);
  const physical = new Map(FIELDS.filter(() => r.chance(0.4)).map((f) => [f.id, `col-${f.id}-${r.pick(TEXTS)}`] as [number, string]));
  const metadata = newTableMetadata({
    location,
    schema: { type: 'struct', fields: FIELDS },
    partitionSpec: spec,
    properties: physical.size > 0 ? { [Props.physicalNames]: writePhysicalNames(physical) } : {},
    tableUuid: 'u-1',
    nowMs: 1700000000000,
    lastColumnId: 9,
  });
  const operation = r.pick(['append', 'overwrite', 'replace', 'delete'] as const);
  const snapshot: Snapshot = {
    'snapshot-id': BigInt(r.int(1, 2 ** 31)) * 2n ** 31n,
    'sequence-number': r.int(1, 99),
    'timestamp-ms': r.pick([1700000000123, 0, 2 ** 45]),
    'manifest-list': `${location}/metadata/snap.avro`,
    summary: { operation },
    'schema-id': 0,
  };
  metadata.snapshots.push(snapshot);
  const file = (): DataFile => {
    const rel = Array.from({ length: r.int(1, 4) }, () => r.pick(SEGMENTS)).join('/') + '.parquet';
    const partition: Record<string, unknown> = {};
    for (const pf of spec.fields) {
      const roll = r.chance(0.2);
      partition[pf.name] = roll
        ? null
        : pf.name === 'region'
          ? r.pick(TEXTS)
          : pf.name === 'n'
            ? r.int(-(2 ** 31), 2 ** 31 - 1)
            : pf.name === 'big'
              ? r.pick([2n ** 53n + 1n, -(2n ** 63n), 7n])
              : pf.name === 'amount'
                ? r.pick(['12.30', '-0.05', '99999999.99'])
                : pf.name === 'd' || pf.name === 'ts_day'
                  ? r.int(-800000, 800000)
                  : r.chance(0.5);
    }
    const bound = (id: number) => {
      switch (id) {
        case 1:
          return toBinary('long', r.pick([1n, 2n ** 53n + 1n, -(2n ** 63n)]));
        case 2:
        case 9:
          return toBinary('string', r.pick(TEXTS));
        case 3:
          return toBinary('int', r.int(-100, 100));
        case 4:
          return toBinary('long', r.pick([2n ** 53n + 1n, -(2n ** 63n), 7n]));
        case 5:
          return toBinary('decimal(10,2)', r.pick(['12.30', '-0.05']));
        case 6:
          return toBinary('date', r.int(-800000, 800000));
        case 7:
          return toBinary('boolean', r.chance(0.5));
        default:
          return toBinary('timestamptz', r.pick([1704153600000001n, -(2n ** 62n), 0n]));
      }
    };
    const ids = FIELDS.map((f) => f.id).filter(() => r.chance(0.8));
    return {
      content: 0,
      'file-path': r.chance(0.1) ? `s3://elsewhere/${rel}` : `${location}/${rel}`,
      'file-format': 'PARQUET',
      partition: partition as DataFile['partition'],
      'record-count': r.pick([0, 3, r.int(0, 2 ** 45)]),
      'file-size-in-bytes': r.pick([478, r.int(0, 2 ** 50)]),
      'spec-id': 0,
      'value-counts': new Map(ids.map((id) => [id, 3])),
      'null-value-counts': new Map(ids.map((id) => [id, r.pick([0, 1, 3])])),
      'lower-bounds': new Map(ids.filter(() => r.chance(0.9)).map((id) => [id, bound(id)])),
      'upper-bounds': new Map(ids.filter(() => r.chance(0.9)).map((id) => [id, bound(id)])),
    };
  };
  const added = Array.from({ length: r.int(20, 60) }, file);
  const removed = Array.from({ length: r.int(0, 3) }, file);
  const deleteTargets = Array.from({ length: r.int(0, 2) }, file);
  // Deletion vectors for some added files and the delete targets: their adds keep the object path.
  const dv = (target: DataFile) => ({
    file: { ...file(), content: 1 as const, 'file-format': 'PUFFIN' as const, 'referenced-data-file': target['file-path'] },
    deletionVector: { storageType: 'u', pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^', offset: 1, sizeInBytes: 36, cardinality: r.int(1, 9) },
  });
  const withDv = [...added.filter(() => r.chance(0.1)), ...deleteTargets];
  const unique = [...new Map(withDv.map((f) => [f['file-path'], f])).values()];
  return { metadata, snapshot, changes: { added, removed, addedDeletes: unique.map(dv), removedDeletes: [], deleteTargets } };
}
