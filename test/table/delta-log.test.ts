import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { MemoryStore } from '../../src/io/memory-store.ts';
import type { Action, AddFile, Metadata, Protocol } from '../../src/format/delta/actions.ts';
import { parseCommit } from '../../src/format/delta/actions.ts';
import type { DeltaSnapshot } from '../../src/format/delta/replay.ts';
import { toDeltaSchema } from '../../src/format/delta/schema.ts';
import type { Schema } from '../../src/format/iceberg/types.ts';
import { dataFileUri, deltaScanTask, latestDeltaVersion, readDeltaSnapshot, writeDeltaCommit } from '../../src/table/delta/delta-log.ts';
import { rejection } from '../helpers.ts';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'day', required: false, type: 'date' },
    { id: 3, name: 'region', required: false, type: 'string' },
  ],
};
const physical = new Map([
  [1, 'id'],
  [2, 'col-day'],
  [3, 'col-region'],
]);
const protocol: Protocol = { minReaderVersion: 2, minWriterVersion: 5 };
const metadata: Metadata = {
  id: 'tbl',
  format: { provider: 'parquet', options: {} },
  schemaString: JSON.stringify(toDeltaSchema(schema, physical)),
  partitionColumns: ['day', 'region'],
  configuration: { 'delta.columnMapping.mode': 'name' },
};

function add(path: string, partitionValues: Record<string, string | null> = { 'col-day': '2024-01-02', 'col-region': 'eu' }, extra: Partial<AddFile> = {}): Action {
  return { add: { path, partitionValues, size: 1, modificationTime: 1, dataChange: true, ...extra } };
}

async function tableWithThreeVersions(root: string): Promise<MemoryStore> {
  const store = new MemoryStore();
  expect(await writeDeltaCommit(store, root, 0, [{ commitInfo: { timestamp: 1000 } }, { protocol }, { metaData: metadata }])).toBe(true);
  expect(await writeDeltaCommit(store, root, 1, [{ commitInfo: { timestamp: 2000 } }, add('a.parquet')])).toBe(true);
  expect(await writeDeltaCommit(store, root, 2, [{ commitInfo: { timestamp: 3000 } }, { remove: { path: 'a.parquet', dataChange: true } }, add('b.parquet')])).toBe(true);
  return store;
}

describe('writeDeltaCommit', () => {
  it('writes a version once; the second writer gets false and the first commit stays', async () => {
    const store = new MemoryStore();
    const first: Action[] = [{ commitInfo: { timestamp: 1, icebergSnapshotId: 5n } }, { protocol }, { metaData: metadata }];
    expect(await writeDeltaCommit(store, 't', 0, first)).toBe(true);
    expect(await writeDeltaCommit(store, 't', 0, [{ commitInfo: { timestamp: 2 } }])).toBe(false);
    const text = new TextDecoder().decode(await store.get('t/_delta_log/00000000000000000000.json'));
    expect(parseCommit(text, 'v0')).toEqual(first);
  });
});

describe('latestDeltaVersion', () => {
  it('is undefined without a log and the newest version otherwise', async () => {
    expect(await latestDeltaVersion(new MemoryStore(), 't')).toBeUndefined();
    expect(await latestDeltaVersion(await tableWithThreeVersions('t'), 't')).toBe(2);
    expect(await latestDeltaVersion(await tableWithThreeVersions('t'), 'other')).toBeUndefined();
  });
});

describe('readDeltaSnapshot', () => {
  for (const root of ['', 'warehouse/db/t']) {
    it(`replays the log under ${JSON.stringify(root)}`, async () => {
      const store = await tableWithThreeVersions(root);
      const s = await readDeltaSnapshot(store, root);
      expect(s.version).toBe(2);
      expect(s.files.map((f) => f.path)).toEqual(['b.parquet']);
      expect(s.timestampMs).toBe(3000);
      const v1 = await readDeltaSnapshot(store, root, { version: 1 });
      expect(v1.files.map((f) => f.path)).toEqual(['a.parquet']);
    });
  }

  it('travels by time to the newest version committed at or before it', async () => {
    const store = await tableWithThreeVersions('t');
    expect((await readDeltaSnapshot(store, 't', { timestampMs: 2500 })).version).toBe(1);
    expect((await readDeltaSnapshot(store, 't', { timestampMs: 2000 })).version).toBe(1);
    expect((await readDeltaSnapshot(store, 't', { timestampMs: 9999 })).version).toBe(2);
    expect((await readDeltaSnapshot(store, 't', { timestampMs: 1000 })).version).toBe(0);
    const early = await rejection(readDeltaSnapshot(store, 't', { timestampMs: 999 }));
    expect(isTwinlakeError(early, 'not-found')).toBe(true);
  });

  it('refuses a version and a time together, and tables without a log', async () => {
    const store = await tableWithThreeVersions('t');
    expect(isTwinlakeError(await rejection(readDeltaSnapshot(store, 't', { version: 1, timestampMs: 1 })), 'invalid-input')).toBe(true);
    const none = await rejection(readDeltaSnapshot(store, 'nope'));
    expect(isTwinlakeError(none, 'not-found')).toBe(true);
    expect(none.message).toMatch(/^delta log: expected nope\/_delta_log\//);
    expect(isTwinlakeError(await rejection(readDeltaSnapshot(store, 't', { version: 3 })), 'not-found')).toBe(true);
  });

  it('ignores a torn _last_checkpoint and one that points past the listing', async () => {
    const store = await tableWithThreeVersions('t');
    await store.put('t/_delta_log/_last_checkpoint', '{"version":');
    expect((await readDeltaSnapshot(store, 't')).version).toBe(2);
    await store.put('t/_delta_log/_last_checkpoint', '{"version":1,"size":3}');
    const s = await readDeltaSnapshot(store, 't');
    expect([s.version, s.files.map((f) => f.path)]).toEqual([2, ['b.parquet']]);
  });
});

describe('deltaScanTask', () => {
  function snapshot(files: AddFile[], p: Protocol = protocol, m: Metadata = metadata): DeltaSnapshot {
    return { version: 3, protocol: p, metadata: m, files, tombstones: [], txns: new Map(), domainMetadata: new Map() };
  }
  const file = (path: string, pv: Record<string, string | null>, extra: Partial<AddFile> = {}) =>
    (add(path, pv, extra) as { add: AddFile }).add;

  it('turns partition values keyed by physical name into typed constants keyed by field ID', () => {
    const task = deltaScanTask(
      snapshot([file('day=2024-01-02/a.parquet', { 'col-day': '2024-01-02', 'col-region': 'eu' }, { stats: '{"numRecords":4}' }), file('b.parquet', { 'col-day': null, 'col-region': '' })]),
      'file:///tables/t',
    );
    expect(task.resolution).toBe('name');
    expect(task.physicalNames).toEqual(physical);
    expect(task.schema.fields.map((f) => [f.id, f.name, f.type])).toEqual([
      [1, 'id', 'long'],
      [2, 'day', 'date'],
      [3, 'region', 'string'],
    ]);
    expect(task.files[0]).toEqual({
      path: 'file:///tables/t/day=2024-01-02/a.parquet',
      recordCount: 4,
      constants: new Map<number, unknown>([
        [2, 19724],
        [3, 'eu'],
      ]),
    });
    expect(task.files[1]!.constants).toEqual(new Map([[2, null], [3, null]]));
    expect(task.files[1]!.recordCount).toBeUndefined();
  });

  it('resolves by field ID in mapping mode id', () => {
    const m = { ...metadata, configuration: { 'delta.columnMapping.mode': 'id' } };
    expect(deltaScanTask(snapshot([], protocol, m), 'file:///t').resolution).toBe('field-id');
    // Without protocol support the property is ignored: logical names, resolution by name.
    const legacy = deltaScanTask(snapshot([], { minReaderVersion: 1, minWriterVersion: 2 }, { ...m, partitionColumns: [] }), 'file:///t');
    expect(legacy.resolution).toBe('name');
    expect(legacy.physicalNames.get(2)).toBe('day');
  });

  it('hands deletion vectors to the engine: files by location, inline ones decoded', () => {
    const onDisk = file('a.parquet', { 'col-day': null, 'col-region': null }, {
      deletionVector: { storageType: 'u', pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^', offset: 4, sizeInBytes: 40, cardinality: 6 },
    });
    const inline = file('b.parquet', { 'col-day': null, 'col-region': null }, {
      deletionVector: { storageType: 'i', pathOrInlineDv: 'wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L', sizeInBytes: 40, cardinality: 6 },
    });
    const task = deltaScanTask(snapshot([onDisk, inline]), 'file:///t');
    expect(task.files[0]!.deletes).toEqual({
      positions: [{ kind: 'vector', path: 'file:///t/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin', offset: 4, length: 48, cardinality: 6 }],
    });
    const p = task.files[1]!.deletes!.positions![0]!;
    expect(p.kind === 'bitmap' && [...p.bitmap.values()].map(Number)).toEqual([3, 4, 7, 11, 18, 29]);
    const wrong = file('c.parquet', { 'col-day': null, 'col-region': null }, { deletionVector: { ...inline.deletionVector!, cardinality: 5 } });
    expect(() => deltaScanTask(snapshot([wrong]), 'file:///t')).toThrow(/expected cardinality 5, found 6/);
  });

  it('refuses unknown reader features and partition columns missing from the schema', () => {
    expect(() => deltaScanTask(snapshot([], { minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['catalogManaged'], writerFeatures: [] }), 'file:///t')).toThrow(
      /reader features \[catalogManaged\]/,
    );
    expect(() => deltaScanTask(snapshot([], protocol, { ...metadata, partitionColumns: ['nope'] }), 'file:///t')).toThrow(/partition column "nope"/);
  });
});

describe('dataFileUri', () => {
  it('decodes add paths once, relative or absolute', () => {
    expect(dataFileUri('file:///t', 'ts=2021-01-01%2010%253A00%253A00/f.parquet')).toBe('file:///t/ts=2021-01-01 10%3A00%3A00/f.parquet');
    expect(dataFileUri('s3://bucket/t/', 'a%2Bb/f.parquet')).toBe('s3://bucket/t/a+b/f.parquet');
    expect(dataFileUri('file:///t', 's3://other/x%20y.parquet')).toBe('s3://other/x y.parquet');
    expect(dataFileUri('file:///t', 'file:/elsewhere/f.parquet')).toBe('file:/elsewhere/f.parquet');
    expect(dataFileUri('memory://m', 'data/😈.parquet')).toBe('memory://m/data/😈.parquet');
  });
});
