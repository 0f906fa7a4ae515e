import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { applyUpdates } from '../../src/format/iceberg/updates.ts';
import { partitionIdentity } from '../../src/format/iceberg/snapshot-summary.ts';
import { currentSchema, currentSnapshot } from '../../src/format/iceberg/table-metadata.ts';
import { DataFileContent, type DataFile, type TableMetadata } from '../../src/format/iceberg/types.ts';
import { liveFiles } from '../../src/table/read/iceberg-scan.ts';
import { SnapshotProducer, type SnapshotChange } from '../../src/table/commit/snapshot-producer.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

/**
 * The producer's conflict checks for merges and deletes, with the interleaving spelled out: a
 * change planned on one snapshot is built on a newer one that another writer committed.
 */
describe('snapshot producer: deletes committed after a merge was planned', () => {
  const fx = lakehouseFixture();

  async function setup(name: string) {
    const t = fx.lake.table(name);
    await t.append([{ id: 1, p: 'a' }, { id: 2, p: 'a' }, { id: 3, p: 'b' }], { partition: 'p' });
    const { metadata } = await fx.lake.catalog.loadTable({ namespace: [name.split('.')[0]!], name: name.split('.')[1]! });
    const { data } = await liveFiles(fx.lake.io, metadata, currentSnapshot(metadata)!);
    const fileA = data.find((f) => f.partition.p === 'a')!;
    const fileB = data.find((f) => f.partition.p === 'b')!;
    return { metadata, fileA, fileB };
  }

  /** `change` committed on `base` as another writer would (metadata only, no catalog). */
  async function commitOn(base: TableMetadata, change: SnapshotChange, id: bigint): Promise<TableMetadata> {
    const producer = new SnapshotProducer(fx.lake.io, id, change);
    const { snapshot } = await producer.produce(base, base['last-updated-ms'] + 1, { schema: currentSchema(base), summaryExtra: {} });
    return applyUpdates(base, [
      { action: 'add-snapshot', snapshot },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id },
    ], { nowMs: snapshot['timestamp-ms'] });
  }

  /** A position delete file of another engine: scoped by partition, naming no data file. */
  const foreignDeletes = (like: DataFile, content: 1 | 2): DataFile => ({
    content: content === 1 ? DataFileContent.PositionDeletes : DataFileContent.EqualityDeletes,
    'file-path': `${like['file-path']}.deletes.parquet`,
    'file-format': 'PARQUET',
    partition: like.partition,
    'spec-id': like['spec-id'],
    'record-count': 1,
    'file-size-in-bytes': 100,
    ...(content === 2 ? { 'equality-ids': [1] } : {}),
  });

  const rewriteOf = (file: DataFile, plannedAt: number): SnapshotChange => ({
    operation: 'overwrite',
    added: [],
    replaceAll: false,
    removeFiles: new Set([file['file-path']]),
    rowDeletes: { replaced: new Map([[file['file-path'], []]]), partitions: new Set([partitionIdentity(file)]), plannedAt },
  });

  async function outcome(base: TableMetadata, change: SnapshotChange): Promise<'conflict' | 'ok'> {
    try {
      await new SnapshotProducer(fx.lake.io, 99n, change).produce(base, base['last-updated-ms'] + 1, { schema: currentSchema(base), summaryExtra: {} });
      return 'ok';
    } catch (e) {
      if (isTwinlakeError(e, 'commit-conflict')) return 'conflict';
      throw e;
    }
  }

  for (const content of [1, 2] as const) {
    it(`a newer ${content === 1 ? 'partition-scoped position' : 'equality'} delete in the rewritten file's partition is a conflict; elsewhere it is not`, async () => {
      const { metadata, fileA, fileB } = await setup(`sp.c${content}`);
      const plannedAt = metadata['last-sequence-number'];
      const sameNewer = await commitOn(metadata, { operation: 'delete', added: [], replaceAll: false, addedDeletes: [foreignDeletes(fileA, content)] }, 11n);
      expect(await outcome(sameNewer, rewriteOf(fileA, plannedAt))).toBe('conflict');
      // The same delete file, already there when the change was planned, is not a new fact.
      expect(await outcome(sameNewer, rewriteOf(fileA, sameNewer['last-sequence-number']))).toBe('ok');
      const otherPartition = await commitOn(metadata, { operation: 'delete', added: [], replaceAll: false, addedDeletes: [foreignDeletes(fileB, content)] }, 12n);
      expect(await outcome(otherPartition, rewriteOf(fileA, plannedAt))).toBe('ok');
    });
  }

  it('a concurrent append is no conflict: the change is rebased on it', async () => {
    const { metadata, fileA, fileB } = await setup('sp.append');
    const plannedAt = metadata['last-sequence-number'];
    const appended = await commitOn(metadata, { operation: 'append', added: [{ ...fileB, 'file-path': `${fileB['file-path']}.more.parquet` }], replaceAll: false }, 15n);
    expect(await outcome(appended, rewriteOf(fileA, plannedAt))).toBe('ok');
  });

  it('a newer delete naming the touched file is a conflict, and so is the touched file gone', async () => {
    const { metadata, fileA } = await setup('sp.named');
    const plannedAt = metadata['last-sequence-number'];
    const named = { ...foreignDeletes(fileA, 1), 'referenced-data-file': fileA['file-path'] };
    const withDv = await commitOn(metadata, { operation: 'delete', added: [], replaceAll: false, addedDeletes: [named] }, 13n);
    const mergeOnRead: SnapshotChange = { operation: 'delete', added: [], replaceAll: false, addedDeletes: [{ ...named, 'file-path': `${named['file-path']}.2` }], rowDeletes: rewriteOf(fileA, plannedAt).rowDeletes };
    expect(await outcome(withDv, mergeOnRead)).toBe('conflict');
    const removed = await commitOn(metadata, { operation: 'delete', added: [], replaceAll: false, removeFiles: new Set([fileA['file-path']]) }, 14n);
    expect(await outcome(removed, mergeOnRead)).toBe('conflict');
    expect(await outcome(metadata, mergeOnRead)).toBe('ok');
  });
});
