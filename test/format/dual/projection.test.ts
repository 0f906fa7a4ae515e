import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fileUri } from '../../../src/core/uri.ts';
import { type Action, type AddFile, serializeCommit } from '../../../src/format/delta/actions.ts';
import { decodePath, fileKey } from '../../../src/format/delta/replay.ts';
import { parseStats } from '../../../src/format/delta/stats.ts';
import { currentSchema, normalizeTableMetadata, snapshotById } from '../../../src/format/iceberg/table-metadata.ts';
import type { DataFile, TableMetadata } from '../../../src/format/iceberg/types.ts';
import { DELTA_DV_KEY, DELTA_START_KEY } from '../../../src/format/dual/summary-keys.ts';
import { dvId, type JumpInput, liveDeleteFiles, projectJump, projectSnapshot, type SnapshotInput } from '../../../src/format/dual/projection.ts';
import { assignPhysicalNames } from '../../../src/format/dual/physical-names.ts';
import { Props, writePhysicalNames } from '../../../src/format/dual/table-properties.ts';
import { FileIO } from '../../../src/io/file-io.ts';
import { storeForLocation } from '../../../src/io/store-for-uri.ts';
import { liveFiles } from '../../../src/table/read/iceberg-scan.ts';
import { hasTestdata, listFiles, testdata } from '../../helpers.ts';
import { decodeFixture, parseFixture } from './fixture-json.ts';

/**
 * The Delta projection as a pure function, over fixtures (test/format/dual/fixtures): each
 * `<case>.json` is the input of one projection call, `<case>.expected.json` the Delta commit of
 * that version as the table's log held it when the fixture was made (make-fixtures.ts says how;
 * the files were reviewed by eye). Beyond the byte comparison, each case asserts the rule of the
 * Delta protocol (../shared/reference/delta-PROTOCOL.md) it exercises.
 */
const dir = join(import.meta.dirname, 'fixtures');
const text = (name: string) => readFileSync(join(dir, name), 'utf8');

function snapshotInput(name: string): SnapshotInput {
  const raw = parseFixture(text(`${name}.json`), `${name}.json`);
  const metadata = normalizeTableMetadata(raw.metadata, `${name}.json`);
  const snapshot = snapshotById(metadata, BigInt(raw['snapshot-id']))!;
  const follows = decodeFixture(raw.follows);
  return follows === null ? { metadata, snapshot, follows, live: decodeFixture(raw.live) } : { metadata, snapshot, follows, changes: decodeFixture(raw.changes) };
}

function jumpInput(name: string): JumpInput {
  const raw = parseFixture(text(`${name}.json`), `${name}.json`);
  const metadata = normalizeTableMetadata(raw.metadata, `${name}.json`);
  return { metadata, target: snapshotById(metadata, BigInt(raw['target-snapshot-id']))!, live: decodeFixture(raw.live), delta: decodeFixture(raw.delta) };
}

const expected = (name: string) => text(`${name}.expected.json`);
const kinds = (actions: Action[]) => actions.map((a) => Object.keys(a)[0]);
const adds = (actions: Action[]) => actions.flatMap((a) => ('add' in a ? [a.add] : []));
const removes = (actions: Action[]) => actions.flatMap((a) => ('remove' in a ? [a.remove] : []));
const commitInfoOf = (actions: Action[]) => (actions[0] as { commitInfo: Record<string, any> }).commitInfo;
const metaDataOf = (actions: Action[]) => actions.flatMap((a) => ('metaData' in a ? [a.metaData] : []))[0];
const relative = (metadata: TableMetadata, f: DataFile) => f['file-path'].slice(metadata.location.length + 1);
const records = (list: { stats?: string }[]) => list.reduce((n, a) => n + Number(parseStats(a.stats!)!.numRecords), 0);

function changesOf(input: SnapshotInput) {
  if (input.follows === null) throw new Error('expected a snapshot that follows a version');
  return input.changes;
}

const CASES = ['append', 'overwrite', 'merge-copy-on-write', 'merge-on-read', 'replace', 'schema-change', 'rename', 'partitioned', 'delta-start'];

describe('projectSnapshot: one Iceberg snapshot → the actions of its Delta version', () => {
  for (const name of CASES) {
    it(`${name}: the commit the table's log holds, byte for byte`, () => {
      const input = snapshotInput(name);
      const version = projectSnapshot(input);
      expect(serializeCommit(version.actions)).toBe(expected(name));
      expect(version.version).toBe(input.follows === null ? 0 : input.follows.version + 1);
      // §Commit Provenance Information: the version names the snapshot it mirrors, and its time is
      // the snapshot's, not a clock's.
      const info = commitInfoOf(version.actions);
      expect(info.icebergSnapshotId).toBe(input.snapshot['snapshot-id']);
      expect(info.icebergSequenceNumber).toBe(input.snapshot['sequence-number']);
      expect(info.timestamp).toBe(input.snapshot['timestamp-ms']);
    });
  }

  it('append: a blind append of the added file, with no protocol or metaData', () => {
    const input = snapshotInput('append');
    const { actions } = projectSnapshot(input);
    expect(kinds(actions)).toEqual(['commitInfo', 'txn', 'add']);
    expect(commitInfoOf(actions)).toMatchObject({ operation: 'WRITE', operationParameters: { mode: 'Append' }, isBlindAppend: true });
    const [add] = adds(actions);
    // §Add File and Remove File: a path relative to the table root, modificationTime the commit's.
    expect(add!.path).toBe(relative(input.metadata, changesOf(input).added[0]!));
    expect(add).toMatchObject({ dataChange: true, size: changesOf(input).added[0]!['file-size-in-bytes'], modificationTime: input.snapshot['timestamp-ms'] });
    expect(parseStats(add!.stats!)!.numRecords).toBe(changesOf(input).added[0]!['record-count']);
  });

  it('overwrite (replace all): every removed file is a remove, the new file an add, not blind', () => {
    const input = snapshotInput('overwrite');
    const { actions } = projectSnapshot(input);
    const changes = changesOf(input);
    expect(changes.removed.length).toBe(2);
    expect(removes(actions).map((r) => r.path).sort()).toEqual(changes.removed.map((f) => relative(input.metadata, f)).sort());
    expect(adds(actions).map((a) => a.path)).toEqual(changes.added.map((f) => relative(input.metadata, f)));
    expect(commitInfoOf(actions)).toMatchObject({ operation: 'WRITE', operationParameters: { mode: 'Overwrite' }, isBlindAppend: false });
    expect([...removes(actions), ...adds(actions)].every((a) => a.dataChange)).toBe(true);
  });

  it('copy-on-write merge: the rewritten file is removed and its rewrite added, both dataChange true', () => {
    const { actions } = projectSnapshot(snapshotInput('merge-copy-on-write'));
    expect(kinds(actions)).toEqual(['commitInfo', 'txn', 'remove', 'add']);
    expect(commitInfoOf(actions)).toMatchObject({ operation: 'MERGE', isBlindAppend: false });
    expect([...removes(actions), ...adds(actions)].every((a) => a.dataChange === true)).toBe(true);
    expect(removes(actions)[0]!.path).not.toBe(adds(actions)[0]!.path);
  });

  it('merge-on-read: a deletion vector on a live file is that file removed and added again with the DV', () => {
    const input = snapshotInput('merge-on-read');
    const { actions } = projectSnapshot(input);
    const changes = changesOf(input);
    const target = changes.deleteTargets[0]!;
    const path = relative(input.metadata, target);
    // §Add File and Remove File: the logical file is (path, deletion vector), so a new DV is a
    // remove of the logical file without it and an add of the one with it.
    const [remove] = removes(actions);
    expect(remove).toMatchObject({ path, dataChange: true });
    expect(remove!.deletionVector).toBeUndefined();
    const again = adds(actions).find((a) => a.path === path)!;
    expect(again.deletionVector).toEqual(changes.addedDeletes[0]!.deletionVector);
    expect(changes.addedDeletes[0]!.file['referenced-data-file']).toBe(target['file-path']);
    // §Per-file Statistics: the stats still describe every row of the file, so no longer tightly.
    expect(parseStats(again.stats!)!.tightBounds).toBe(false);
    // The first deletion vector turns the table feature on (§Deletion Vectors, §Table Features).
    const protocol = actions.find((a) => 'protocol' in a) as { protocol: { readerFeatures: string[]; writerFeatures: string[] } };
    expect(protocol.protocol.readerFeatures).toContain('deletionVectors');
    expect(protocol.protocol.writerFeatures).toContain('deletionVectors');
    expect(metaDataOf(actions)!.configuration['delta.enableDeletionVectors']).toBe('true');
    // The merge's new row is a plain add.
    expect(adds(actions).filter((a) => a.path !== path).map((a) => a.path)).toEqual(changes.added.map((f) => relative(input.metadata, f)));
  });

  it('replace (compaction): OPTIMIZE, every add and remove dataChange false, the same rows', () => {
    const input = snapshotInput('replace');
    const { actions } = projectSnapshot(input);
    expect(input.snapshot.summary.operation).toBe('replace');
    expect(commitInfoOf(actions)).toMatchObject({ operation: 'OPTIMIZE', isBlindAppend: false });
    // §Add File and Remove File: dataChange false "only rearranges existing data".
    expect(removes(actions)).toHaveLength(2);
    expect([...removes(actions), ...adds(actions)].every((a) => a.dataChange === false)).toBe(true);
    const removedRows = changesOf(input).removed.reduce((n, f) => n + f['record-count'], 0);
    expect(records(adds(actions))).toBe(removedRows);
  });

  it('schema change: a metaData action with the new schema, its column mapping and maxColumnId', () => {
    const input = snapshotInput('schema-change');
    const { actions } = projectSnapshot(input);
    expect(input.follows).not.toBeNull();
    expect(input.snapshot['schema-id']).not.toBe(input.follows!.schemaId);
    expect(kinds(actions)).toEqual(['commitInfo', 'metaData', 'txn', 'add']);
    const meta = metaDataOf(actions)!;
    const fields = JSON.parse(meta.schemaString).fields as { name: string; metadata: Record<string, unknown> }[];
    expect(fields.map((f) => f.name)).toEqual(['id', 'name', 'score']);
    // §Column Mapping: every column has an id and a physical name; maxColumnId tracks the largest id.
    expect(fields.at(-1)!.metadata).toEqual({ 'delta.columnMapping.id': 3, 'delta.columnMapping.physicalName': 'score' });
    expect(meta.configuration['delta.columnMapping.mode']).toBe('name');
    expect(meta.configuration['delta.columnMapping.maxColumnId']).toBe(String(input.metadata['last-column-id']));
    expect(meta.id).toBe(input.metadata['table-uuid']);
  });

  it('rename by another engine: the Delta schema shows the new name, the physical name and the stats keep the old one', () => {
    const input = snapshotInput('rename');
    const { actions } = projectSnapshot(input);
    const fields = JSON.parse(metaDataOf(actions)!.schemaString).fields as { name: string; metadata: Record<string, unknown> }[];
    expect(fields[1]).toMatchObject({ name: 'label', metadata: { 'delta.columnMapping.physicalName': 'name' } });
    // §Writer Requirements for Column Mapping: statistics by physical name.
    const stats = parseStats(adds(actions)[0]!.stats!)!;
    expect(Object.keys(stats.minValues!)).toEqual(['id', 'name', 'score']);
  });

  it('identity and transform partitions: partitionValues by physical name for identity columns only, null stays null', () => {
    const input = snapshotInput('partitioned');
    const { actions } = projectSnapshot(input);
    const spec = input.metadata['partition-specs'].find((s) => s['spec-id'] === input.metadata['default-spec-id'])!;
    expect(spec.fields.map((f) => f.transform)).toEqual(['identity', 'day']);
    // day(ts) is no Delta partition column (today's rule, DESIGN.md §4): per-file stats serve it.
    expect(metaDataOf(actions)).toBeUndefined();
    const values = adds(actions).map((a) => a.partitionValues);
    expect(values).toEqual(changesOf(input).added.map((f) => ({ region: f.partition.region ?? null })));
    expect(values).toContainEqual({ region: null });
    expect(commitInfoOf(actions).operationParameters.partitionBy).toBe('["region"]');

    // A column whose physical name differs from its name (dropped and re-added, or renamed).
    const renamed = { ...input.metadata, properties: { ...input.metadata.properties, [Props.physicalNames]: JSON.stringify({ 1: 'id', 2: 'region_7', 3: 'ts' }) } };
    const again = projectSnapshot({ ...input, metadata: renamed } as SnapshotInput);
    expect(adds(again.actions).map((a) => a.partitionValues)).toEqual(values.map((v) => ({ region_7: v.region })));
  });

  it('the first Delta version of a table that gains Delta: CONVERT of every live file', () => {
    const input = snapshotInput('delta-start');
    expect(input.snapshot.summary[DELTA_START_KEY]).toBe('true');
    const version = projectSnapshot(input);
    expect(version.version).toBe(0);
    expect(kinds(version.actions)).toEqual(['commitInfo', 'protocol', 'metaData', 'txn', 'add', 'add']);
    expect(commitInfoOf(version.actions)).toMatchObject({ operation: 'CONVERT', operationParameters: { numFiles: '2', sourceFormat: 'iceberg' } });
    if (input.follows !== null) throw new Error('expected the start of the log');
    expect(adds(version.actions).map((a) => a.path).sort()).toEqual(input.live.map((l) => relative(input.metadata, l.file)).sort());
    // Two appends before Delta was added: 1 + 2 rows, all live.
    expect(records(adds(version.actions))).toBe(3);
  });

  it('a snapshot of another engine after deletion vectors keeps the feature (table features are never dropped)', () => {
    const input = snapshotInput('schema-change');
    const summary = { ...input.snapshot.summary };
    delete summary[DELTA_DV_KEY];
    const foreign = { ...input, snapshot: { ...input.snapshot, summary } } as SnapshotInput;
    const { actions } = projectSnapshot(foreign);
    expect(kinds(actions)).not.toContain('protocol');
    expect(metaDataOf(actions)!.configuration['delta.enableDeletionVectors']).toBe('true');
  });
});

describe('projectJump: the live files on each side → one version that makes Delta equal Iceberg', () => {
  it('rollback: the commit the table log holds, a RESTORE whose live files are the target snapshot', () => {
    const input = jumpInput('rollback');
    const version = projectJump(input);
    expect(serializeCommit(version.actions)).toBe(expected('rollback'));
    expect(version.version).toBe(input.delta.version + 1);
    const info = commitInfoOf(version.actions);
    expect(info).toMatchObject({ operation: 'RESTORE', icebergSnapshotId: input.target['snapshot-id'], isBlindAppend: false });
    // Commit times only grow: time travel by timestamp picks the version by its commit time.
    expect(info.timestamp).toBeGreaterThanOrEqual(input.delta.timestampMs!);
    // §Action Reconciliation: applying the version to the log's live files gives the target's.
    const live = new Map(input.delta.files.map((a) => [fileKey(a.path, dvId(a.deletionVector)), a]));
    for (const r of removes(version.actions)) expect(live.delete(fileKey(r.path, dvId(r.deletionVector)))).toBe(true);
    for (const a of adds(version.actions)) live.set(fileKey(a.path, dvId(a.deletionVector)), a);
    expect([...live.values()].map((a) => decodePath(a.path)).sort()).toEqual(input.live.map((l) => relative(input.metadata, l.file)).sort());
    // The metaData follows the target's schema (before the column score was added).
    expect(JSON.parse(metaDataOf(version.actions)!.schemaString).fields.map((f: { name: string }) => f.name)).toEqual(['id', 'name']);
    // Deletion vectors stay on: the log had them.
    expect(kinds(version.actions)).not.toContain('protocol');
  });

  it('from a log without files: every live file is added, nothing removed', () => {
    const input = jumpInput('rollback');
    const version = projectJump({ ...input, delta: { version: 0, files: [] } });
    expect(removes(version.actions)).toEqual([]);
    expect(adds(version.actions).map((a) => a.path)).toEqual(input.live.map((l) => relative(input.metadata, l.file)));
    expect(kinds(version.actions).slice(0, 3)).toEqual(['commitInfo', 'protocol', 'metaData']);
  });
});

describe('the projection is deterministic', () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('the same input gives byte-identical JSON, whatever the clock and the random numbers say, and is left as it was', () => {
    for (const name of [...CASES, 'rollback']) {
      const project = (input: SnapshotInput | JumpInput) => serializeCommit(('target' in input ? projectJump(input) : projectSnapshot(input)).actions);
      const load = () => (name === 'rollback' ? jumpInput(name) : snapshotInput(name));
      const input = load();
      const copy = structuredClone(input);
      const first = project(input);
      expect(input).toEqual(copy);
      expect(project(input)).toBe(first);
      vi.useFakeTimers();
      vi.setSystemTime(new Date('2031-07-04T00:00:00Z'));
      vi.spyOn(Math, 'random').mockReturnValue(0.5);
      const later = project(load());
      vi.useRealTimers();
      vi.restoreAllMocks();
      expect(later).toBe(first);
    }
  });
});

/**
 * Tables other engines wrote (../shared/testdata/iceberg): their metadata and manifests are read
 * here (the test's I/O), projected as the start of a Delta log, and the live adds compared with
 * the data files in the table's folder, whose Hive-style folder names give the partition values.
 */
const FOREIGN = [
  { dir: 'icebergcxx-partitioning_with_null_value', identity: ['c1', 'c2'] },
  { dir: 'icebergcxx-day_timestamptz_partitioning', identity: [] },
];

describe.skipIf(!hasTestdata)('projection of tables other engines wrote (skipped without ../shared/testdata or $TWINLAKE_TESTDATA)', () => {
  const fixtures: { dir: string; current_metadata: string; location_prefixes: string[]; expected_rows: number }[] = hasTestdata
    ? parseFixture(readFileSync(join(testdata, 'iceberg', 'fixtures.json'), 'utf8'), 'fixtures.json')
    : [];

  for (const { dir: name, identity } of FOREIGN) {
    it(`${name}: the adds are the table's data files, partitioned as its folders say`, async () => {
      const fx = fixtures.find((f) => f.dir === name)!;
      const root = join(testdata, 'iceberg', name);
      const prefix = fx.location_prefixes[0]!;
      const io = new FileIO((uri) => storeForLocation(uri.startsWith(prefix) ? fileUri(root + uri.slice(prefix.length)) : uri));
      const foreign = normalizeTableMetadata(parseFixture(readFileSync(join(root, fx.current_metadata), 'utf8'), fx.current_metadata), fx.current_metadata);
      // Physical names as register records them: the columns were never renamed, so their names.
      const physicalNames = writePhysicalNames(assignPhysicalNames(currentSchema(foreign), new Map()));
      const metadata = { ...foreign, properties: { ...foreign.properties, [Props.physicalNames]: physicalNames } };
      const snapshot = snapshotById(metadata, metadata['current-snapshot-id']!)!;
      const found = await liveFiles(io, metadata, snapshot);
      expect(found.deletes).toEqual([]);
      const live = liveDeleteFiles(metadata, found).map(({ file }) => ({ file }));

      const { actions } = projectSnapshot({ metadata, snapshot, follows: null, live });
      const files = listFiles(join(root, 'data')).filter((f) => f.endsWith('.parquet'));
      const added = adds(actions) as AddFile[];
      expect(added.map((a) => decodePath(a.path)).sort()).toEqual(files.map((f) => `data/${f}`).sort());
      expect(records(added)).toBe(fx.expected_rows);
      expect(metaDataOf(actions)!.partitionColumns).toEqual(identity);
      // Transforms other than identity add no column to Delta (no generated column): the Delta
      // schema has the Iceberg columns and nothing else.
      const fields = JSON.parse(metaDataOf(actions)!.schemaString).fields as { name: string; metadata: Record<string, unknown> }[];
      expect(fields.map((f) => f.name)).toEqual(currentSchema(metadata).fields.map((f) => f.name));
      expect(fields.every((f) => f.metadata['delta.generationExpression'] === undefined)).toBe(true);
      for (const a of added) {
        const folders = Object.fromEntries(decodePath(a.path).split('/').slice(1, -1).map((s) => s.split('=') as [string, string]));
        const wanted = Object.fromEntries(identity.map((c) => [c, folders[c] === 'null' ? null : folders[c]!]));
        expect(a.partitionValues).toEqual(wanted);
      }
    });
  }
});
