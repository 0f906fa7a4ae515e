import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { newSnapshotId } from '../../src/core/ids.ts';
import { fileUri, localPath } from '../../src/core/uri.ts';
import type { Lakehouse } from '../../src/index.ts';
import { commitPath, parseCommit } from '../../src/format/delta/actions.ts';
import { findCommitInfo } from '../../src/format/delta/replay.ts';
import { currentSchema, currentSnapshot } from '../../src/format/iceberg/table-metadata.ts';
import type { Snapshot } from '../../src/format/iceberg/types.ts';
import type { TableUpdate } from '../../src/format/iceberg/updates.ts';
import { liveFiles } from '../../src/table/read/iceberg-scan.ts';
import { SnapshotProducer } from '../../src/table/commit/snapshot-producer.ts';
import { cli } from '../helpers.ts';
import { identOf, ids, expectBothEqual } from '../both-formats.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

/** The Iceberg snapshot Delta version `version` of the table at `dir` mirrors. */
function mirroredBy(dir: string, version: number): bigint | undefined {
  const text = readFileSync(join(dir, commitPath(version)), 'utf8');
  return findCommitInfo(parseCommit(text, commitPath(version)))?.icebergSnapshotId;
}

/** Raw requirements + updates through the catalog, as another engine (or a REST client) commits. */
async function commitRaw(lake: Lakehouse, name: string, updates: TableUpdate[]): Promise<void> {
  const { metadata } = await lake.catalog.loadTable(identOf(name));
  const result = await lake.catalog.commitTable(identOf(name), {
    requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': metadata['current-snapshot-id'] ?? null }],
    updates,
  });
  expect(result.status).toBe('committed');
}

let scratch = 0;

/**
 * A snapshot another engine would write: its own data file in the table's folder, manifests and
 * a summary without Twinlake's keys (no `delta-version`). Added to the table, and made the main
 * branch unless `staged` (a write-audit-publish snapshot waiting for a cherry-pick).
 */
async function foreignSnapshot(
  lake: Lakehouse,
  warehouse: string,
  name: string,
  rows: { id: number }[],
  opts: { staged?: boolean; compaction?: boolean } = {},
): Promise<Snapshot> {
  // The rows become a Parquet file through a scratch table; the file is then copied into the table.
  const source = lake.table(`${name.split('.')[0]}.scratch${scratch++}`);
  await source.append(rows);
  const sourceMeta = (await lake.catalog.loadTable(identOf(`${name.split('.')[0]}.scratch${scratch - 1}`))).metadata;
  const [file] = (await liveFiles(lake.io, sourceMeta, currentSnapshot(sourceMeta)!)).data;
  const dest = join(warehouse, ...name.split('.'), 'data', `foreign-${scratch}.parquet`);
  copyFileSync(localPath(file!['file-path']), dest);

  const { metadata } = await lake.catalog.loadTable(identOf(name));
  const added = [{ ...file!, 'file-path': fileUri(dest) }];
  const producer = new SnapshotProducer(lake.io, newSnapshotId(), { operation: opts.compaction ? 'overwrite' : 'append', added, replaceAll: !!opts.compaction });
  const produced = await producer.produce(metadata, metadata['last-updated-ms'] + 1, { schema: currentSchema(metadata), summaryExtra: { 'engine-name': 'spark' } });
  // A compaction rewrites every live file into one with the same rows: Iceberg's `replace`.
  const snapshot: Snapshot = opts.compaction ? { ...produced.snapshot, summary: { ...produced.snapshot.summary, operation: 'replace' as const } } : produced.snapshot;
  await commitRaw(lake, name, [
    { action: 'add-snapshot', snapshot },
    ...(opts.staged ? [] : [{ action: 'set-snapshot-ref' as const, 'ref-name': 'main', type: 'branch' as const, 'snapshot-id': snapshot['snapshot-id'] }]),
  ]);
  expect(snapshot.summary['delta-version']).toBeUndefined();
  return snapshot;
}

const setMain = (id: bigint): TableUpdate => ({ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': id });

describe('Delta follows whoever changed the Iceberg table', () => {
  const fx = lakehouseFixture();
  const dirOf = (name: string) => join(fx.warehouse, ...name.split('.'));

  it('a rollback becomes a Delta version that removes what the newer snapshots added', async () => {
    const t = fx.lake.table('follow.rollback');
    const first = await t.append(range(0, 2500).map((id) => ({ id })));
    const second = await t.append(range(2500, 5000).map((id) => ({ id })));
    await commitRaw(fx.lake, 'follow.rollback', [setMain(first.snapshotId!)]);
    expect(await t.read()).toHaveLength(2500);

    const synced = await t.syncDelta();
    expect(synced).toEqual({ version: second.deltaVersion! + 1, written: [second.deltaVersion! + 1] });
    expect(mirroredBy(dirOf('follow.rollback'), synced.version)).toBe(first.snapshotId);
    await expectBothEqual(t, range(0, 2500));
    expect((await t.syncDelta()).written).toEqual([]);
    // Time travel still sees the rolled-back rows at the versions that had them, and maps the
    // version the sync wrote to the snapshot it mirrors (no snapshot's delta-version names it).
    expect(await t.read({ format: 'delta', version: second.deltaVersion })).toHaveLength(5000);
    expect(await t.read({ version: synced.version })).toHaveLength(2500);
    expect((await t.files({ version: synced.version })).snapshotId).toBe(first.snapshotId);
    expect((await t.describe()).deltaVersion).toBe(synced.version);

    // The next write builds on the rolled-back state in both formats; its snapshot names the
    // Delta version that really mirrors it.
    const next = await t.append([{ id: 9000 }]);
    expect(next.deltaCommitted).toBe(true);
    expect(next.deltaVersion).toBe(synced.version + 1);
    expect(mirroredBy(dirOf('follow.rollback'), next.deltaVersion!)).toBe(next.snapshotId);
    const meta = (await fx.lake.catalog.loadTable(identOf('follow.rollback'))).metadata;
    expect(currentSnapshot(meta)!.summary['delta-version']).toBe(String(next.deltaVersion));
    await expectBothEqual(t, [...range(0, 2500), 9000]);
  });

  it('a rollback is followed by the next write too, without a sync', async () => {
    const t = fx.lake.table('follow.rollback_write');
    const first = await t.append([{ id: 1 }, { id: 2 }]);
    await t.append([{ id: 3 }]);
    await commitRaw(fx.lake, 'follow.rollback_write', [setMain(first.snapshotId!)]);
    const next = await t.append([{ id: 4 }]);
    expect(next.deltaCommitted).toBe(true);
    await expectBothEqual(t, [1, 2, 4]);
  });

  it('a snapshot of another engine (no delta-version) gets the next Delta version', async () => {
    const name = 'follow.foreign';
    const t = fx.lake.table(name);
    const ours = await t.append([{ id: 1 }]);
    const foreign = await foreignSnapshot(fx.lake, fx.warehouse, name, [{ id: 2 }, { id: 3 }]);
    const synced = await t.syncDelta();
    expect(synced).toEqual({ version: ours.deltaVersion! + 1, written: [ours.deltaVersion! + 1] });
    expect(mirroredBy(dirOf(name), synced.version)).toBe(foreign['snapshot-id']);
    await expectBothEqual(t, [1, 2, 3]);
    // Time travel between the formats follows the log's mapping, not the snapshot summary.
    expect(ids(await t.read({ format: 'delta', snapshotId: foreign['snapshot-id'] }))).toEqual([1, 2, 3]);
    expect((await t.files({ format: 'delta', snapshotId: foreign['snapshot-id'] })).deltaVersion).toBe(synced.version);
    expect(ids(await t.read({ version: synced.version }))).toEqual([1, 2, 3]);
    expect((await t.describe()).deltaVersion).toBe(synced.version);

    // A foreign snapshot followed by our write: the write catches Delta up first, then mirrors itself.
    await foreignSnapshot(fx.lake, fx.warehouse, name, [{ id: 4 }]);
    const next = await t.append([{ id: 5 }]);
    expect(next.deltaVersion).toBe(synced.version + 2);
    expect(mirroredBy(dirOf(name), next.deltaVersion!)).toBe(next.snapshotId);
    await expectBothEqual(t, [1, 2, 3, 4, 5]);
  });

  it('sync replays a long foreign history in order while its snapshots exist', async () => {
    const name = 'follow.history';
    const t = fx.lake.table(name);
    const ours = await t.append([{ id: 0 }]);
    const foreign: Snapshot[] = [];
    for (let i = 1; i <= 4; i++) foreign.push(await foreignSnapshot(fx.lake, fx.warehouse, name, [{ id: i }]));
    const synced = await t.syncDelta();
    const v0 = ours.deltaVersion!;
    expect(synced.written).toEqual([v0 + 1, v0 + 2, v0 + 3, v0 + 4]);
    for (const [i, s] of foreign.entries()) {
      expect(mirroredBy(dirOf(name), v0 + 1 + i)).toBe(s['snapshot-id']);
      expect(ids(await t.read({ format: 'delta', version: v0 + 1 + i }))).toEqual(range(0, i + 2));
    }
    await expectBothEqual(t, range(0, 5));
  });

  it('sync jumps to the current state when the snapshots in between were expired', async () => {
    const name = 'follow.expired';
    const t = fx.lake.table(name);
    const ours = await t.append([{ id: 0 }]);
    const foreign: Snapshot[] = [];
    for (let i = 1; i <= 3; i++) foreign.push(await foreignSnapshot(fx.lake, fx.warehouse, name, [{ id: i }]));
    await commitRaw(fx.lake, name, [{ action: 'remove-snapshots', 'snapshot-ids': [ours.snapshotId!, foreign[0]!['snapshot-id'], foreign[1]!['snapshot-id']] }]);
    const synced = await t.syncDelta();
    expect(synced.written).toEqual([ours.deltaVersion! + 1]);
    expect(mirroredBy(dirOf(name), synced.version)).toBe(foreign[2]!['snapshot-id']);
    await expectBothEqual(t, range(0, 4));
  });

  it('a rollback to a snapshot after the mirrored one was expired is restored by a jump', async () => {
    const name = 'follow.rollback_expired';
    const t = fx.lake.table(name);
    const first = await t.append([{ id: 1 }]);
    const second = await t.append([{ id: 2 }]);
    await commitRaw(fx.lake, name, [setMain(first.snapshotId!)]);
    await commitRaw(fx.lake, name, [{ action: 'remove-snapshots', 'snapshot-ids': [second.snapshotId!] }]);
    const synced = await t.syncDelta();
    expect(synced.written).toEqual([second.deltaVersion! + 1]);
    await expectBothEqual(t, [1]);
  });

  it('a compaction by another engine is Delta OPTIMIZE: files replaced, no data change', async () => {
    const name = 'follow.compacted';
    const t = fx.lake.table(name);
    await t.append([{ id: 1 }]);
    const before = await t.append([{ id: 2 }]);
    const compaction = await foreignSnapshot(fx.lake, fx.warehouse, name, [{ id: 1 }, { id: 2 }], { compaction: true });
    const synced = await t.syncDelta();
    expect(synced.written).toEqual([before.deltaVersion! + 1]);
    const actions = parseCommit(readFileSync(join(dirOf(name), commitPath(synced.version)), 'utf8'), 'compaction');
    const info = findCommitInfo(actions)!;
    expect(info.operation).toBe('OPTIMIZE');
    expect(info.icebergSnapshotId).toBe(compaction['snapshot-id']);
    const files = actions.flatMap((a): { dataChange: boolean }[] => ('add' in a ? [a.add] : 'remove' in a ? [a.remove] : []));
    expect(files).toHaveLength(3);
    expect(files.every((f) => f.dataChange === false)).toBe(true);
    await expectBothEqual(t, [1, 2]);
    expect((await t.files({ format: 'delta' })).files).toHaveLength(1);
  });

  it('a cherry-picked staged snapshot is mirrored like any other', async () => {
    const name = 'follow.cherry';
    const t = fx.lake.table(name);
    const ours = await t.append([{ id: 1 }]);
    // Write-audit-publish: a staged snapshot, invisible on main until cherry-picked (fast-forward).
    const staged = await foreignSnapshot(fx.lake, fx.warehouse, name, [{ id: 2 }], { staged: true });
    expect((await t.syncDelta()).written).toEqual([]);
    await expectBothEqual(t, [1]);
    await commitRaw(fx.lake, name, [setMain(staged['snapshot-id'])]);
    const synced = await t.syncDelta();
    expect(synced.written).toEqual([ours.deltaVersion! + 1]);
    expect(mirroredBy(dirOf(name), synced.version)).toBe(staged['snapshot-id']);
    await expectBothEqual(t, [1, 2]);
  });

  it('an emptied newest Delta commit is named in a warning and its rows restored', async () => {
    const warnings: string[] = [];
    const { Lakehouse } = await import('../../src/index.ts');
    const lake = await Lakehouse.open({ warehouse: fx.warehouse, onWarning: (m) => warnings.push(m) });
    try {
      const name = 'follow.emptied';
      const t = lake.table(name);
      await t.append([{ id: 1 }]);
      const second = await t.append([{ id: 2 }]);
      const file = join(dirOf(name), commitPath(second.deltaVersion!));
      const before = readFileSync(file);
      writeFileSync(file, '');
      // Sync checks every commit first: the emptied one is rewritten from the snapshot it mirrors.
      const synced = await t.syncDelta();
      expect(synced.written).toEqual([]);
      expect(readFileSync(file)).toEqual(before);
      expect(warnings.join('\n')).toContain(commitPath(second.deltaVersion!));
      await expectBothEqual(t, [1, 2]);
    } finally {
      await lake.close();
    }
  });

  it('twinlake sync writes the version a rollback needs, then says it is up to date', async () => {
    const name = 'follow.cli';
    const t = fx.lake.table(name);
    const first = await t.append(range(0, 2500).map((id) => ({ id })));
    const second = await t.append(range(2500, 5000).map((id) => ({ id })));
    await commitRaw(fx.lake, name, [setMain(first.snapshotId!)]);
    const synced = cli(['--warehouse', fx.warehouse, 'sync', name]);
    expect(synced.stderr).toBe('');
    expect(synced.code).toBe(0);
    const version = second.deltaVersion! + 1;
    expect(synced.stdout).toContain(`wrote delta version(s) ${version}; delta is at version ${version}`);
    await expectBothEqual(t, range(0, 2500));
    const again = cli(['--warehouse', fx.warehouse, 'sync', name]);
    expect(again.stdout).toContain(`delta is up to date at version ${version}`);

    writeFileSync(join(dirOf(name), commitPath(version)), '');
    // The version sync wrote for the rollback mirrors no snapshot of its own (it restored an older
    // one), so nothing determines its bytes: sync refuses loudly, naming the file.
    const refused = cli(['--warehouse', fx.warehouse, 'sync', name]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`${commitPath(version)}: delta-commit-empty`);
    expect(refused.stderr).toContain(`no retained iceberg snapshot mirrors delta version ${version}`);
  });
});
