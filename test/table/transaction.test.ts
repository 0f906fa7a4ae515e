import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Catalog } from '../../src/catalog/catalog.ts';
import { systemClock } from '../../src/core/clock.ts';
import { joinUri, localPath } from '../../src/core/uri.ts';
import { commitPath, parseCommit } from '../../src/format/delta/actions.ts';
import { currentSchema, currentSnapshot } from '../../src/format/iceberg/table-metadata.ts';
import type { DataFile, StructType, TableMetadata } from '../../src/format/iceberg/types.ts';
import { alterTable } from '../../src/table/manage/alter.ts';
import { encodeFrom } from '../../src/table/write/batch.ts';
import { finishDelta } from '../../src/table/delta/delta-sync.ts';
import { liveFiles } from '../../src/table/read/iceberg-scan.ts';
import { planSchema } from '../../src/table/write/schema-plan.ts';
import { appendFiles, expireSnapshots, overwriteFiles, rawCommit, replaceFiles, rowDelta, setRef, updatePartitionSpec, updateProperties, updateSchema } from '../../src/table/commit/table-actions.ts';
import type { TableContext } from '../../src/table/table-context.ts';
import { DeltaTransaction, loadDeltaSnapshot, Transaction, type TableAction } from '../../src/table/commit/transaction.ts';
import { errorOf, listFiles } from '../helpers.ts';
import { identOf, contended, ids, expectBothEqual } from '../both-formats.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

/**
 * The Transaction (transaction.ts) on a real SQLite catalog and local files: every action kind,
 * several actions in one commit, a lost compare-and-swap re-applying the actions on the winner's
 * metadata, `rerun` and `conflict` as values, and the Delta-only commit target.
 */

describe('a transaction', () => {
  const fx = lakehouseFixture();

  function contextOf(name: string, catalog: Catalog = fx.lake.catalog): TableContext {
    const ident = identOf(name);
    return { catalog, io: fx.lake.io, ident, location: joinUri(fx.lake.warehouse, ...ident.namespace, ident.name), session: () => fx.lake.session(), clock: systemClock, warn: () => undefined };
  }

  const load = (name: string) => fx.lake.catalog.loadTable(identOf(name));

  /** Data files of the table's current schema holding `sql`'s rows, as a writer would prepare them. */
  async function filesOf(ctx: TableContext, metadata: TableMetadata | undefined, sql: string, schema?: StructType): Promise<DataFile[]> {
    const plan = planSchema(ctx, metadata, schema ?? currentSchema(metadata!), {});
    return (await encodeFrom(ctx, plan, { sql, displayName: 'test' })).dataFiles;
  }

  async function live(metadata: TableMetadata): Promise<DataFile[]> {
    return (await liveFiles(fx.lake.io, metadata, currentSnapshot(metadata)!)).data;
  }

  /** Commits, then lets Delta follow as a write does. */
  async function commit(ctx: TableContext, actions: TableAction[]) {
    const outcome = await new Transaction(ctx, actions).commit();
    if (outcome.status === 'committed' && outcome.snapshot) await finishDelta(ctx, outcome.metadata, outcome.snapshot, ctx.warn);
    return outcome;
  }

  it('appends files, overwrites, and creates a table with its first snapshot', async () => {
    const ctx = contextOf('tx.create');
    const struct: StructType = { type: 'struct', fields: [{ id: 1, name: 'id', required: false, type: 'long' }] };
    const plan = planSchema(ctx, undefined, struct, {});
    const first = (await encodeFrom(ctx, plan, { sql: 'SELECT 1::BIGINT AS id UNION ALL SELECT 2::BIGINT', displayName: 'test' })).dataFiles;
    const created = await new Transaction(ctx, [appendFiles(ctx, first)], { create: plan.newTable! }).commit();
    expect(created).toMatchObject({ status: 'committed', created: true });
    if (created.status !== 'committed') return;
    await finishDelta(ctx, created.metadata, created.snapshot!, ctx.warn);
    const t = fx.lake.table('tx.create');
    await expectBothEqual(t, [1, 2]);

    const more = await filesOf(ctx, (await load('tx.create')).metadata, 'SELECT 3::BIGINT AS id');
    const appended = await commit(ctx, [appendFiles(ctx, more)]);
    expect(appended).toMatchObject({ status: 'committed', created: false });
    expect(appended.status === 'committed' && appended.snapshot!.summary.operation).toBe('append');
    await expectBothEqual(t, [1, 2, 3]);

    const replacement = await filesOf(ctx, (await load('tx.create')).metadata, 'SELECT 7::BIGINT AS id UNION ALL SELECT 8::BIGINT');
    const overwritten = await commit(ctx, [overwriteFiles(ctx, replacement)]);
    expect(overwritten.status === 'committed' && overwritten.snapshot!.summary.operation).toBe('overwrite');
    await expectBothEqual(t, [7, 8]);
  });

  it('a row delta removes and adds data files', async () => {
    const t = fx.lake.table('tx.delta');
    await t.append([{ id: 1 }, { id: 2 }]);
    await t.append([{ id: 3 }]);
    const ctx = contextOf('tx.delta');
    const { metadata } = await load('tx.delta');
    const holding1 = (await live(metadata)).find((f) => f['record-count'] === 2)!;
    const kept = await filesOf(ctx, metadata, 'SELECT 1::BIGINT AS id');
    const outcome = await commit(ctx, [rowDelta(ctx, { added: kept, removeFiles: new Set([holding1['file-path']]) })]);
    expect(outcome.status === 'committed' && outcome.snapshot!.summary.operation).toBe('overwrite');
    await expectBothEqual(t, [1, 3]);
  });

  it('replace files is an Iceberg replace snapshot and a Delta version without data change, rows unchanged', async () => {
    const t = fx.lake.table('tx.compact');
    for (const id of [1, 2, 3]) await t.append([{ id }]);
    const ctx = contextOf('tx.compact');
    const { metadata } = await load('tx.compact');
    const small = await live(metadata);
    expect(small).toHaveLength(3);
    const merged = await filesOf(ctx, metadata, `SELECT * FROM read_parquet([${small.map((f) => `'${localPath(f['file-path'])}'`).join(', ')}])`);
    expect(merged).toHaveLength(1);
    const outcome = await commit(ctx, [replaceFiles(ctx, { removeFiles: new Set(small.map((f) => f['file-path'])), added: merged })]);
    expect(outcome.status).toBe('committed');
    if (outcome.status !== 'committed') return;
    expect(outcome.snapshot!.summary.operation).toBe('replace');
    const version = Number(outcome.snapshot!.summary['delta-version']);
    const actions = parseCommit(readFileSync(join(localPath(metadata.location), commitPath(version)), 'utf8'), commitPath(version));
    const adds = actions.flatMap((a) => ('add' in a ? [a.add] : []));
    const removes = actions.flatMap((a) => ('remove' in a ? [a.remove] : []));
    expect([adds.length, removes.length]).toEqual([1, 3]);
    expect([...adds, ...removes].every((a) => a.dataChange === false)).toBe(true);
    expect((await t.files()).files).toHaveLength(1);
    await expectBothEqual(t, [1, 2, 3]);
  });

  it('updates the schema, the partition spec and properties, and expires snapshots', async () => {
    const t = fx.lake.table('tx.meta');
    await t.append([{ id: 1 }], { properties: { 'doomed.key': 'x' } });
    await t.append([{ id: 2 }]);
    const ctx = contextOf('tx.meta');
    let { metadata } = await load('tx.meta');
    const first = metadata.snapshots[0]!['snapshot-id'];

    const wider: StructType = { type: 'struct', fields: [...currentSchema(metadata).fields, { id: 0, name: 'note', required: false, type: 'string' }] };
    expect((await commit(ctx, [updateSchema(ctx, planSchema(ctx, metadata, wider, {}))])).status).toBe('committed');
    ({ metadata } = await load('tx.meta'));
    expect(currentSchema(metadata).fields.map((f) => f.name)).toEqual(['id', 'note']);

    expect((await commit(ctx, [updatePartitionSpec(ctx, 'bucket(4, id)')])).status).toBe('committed');
    ({ metadata } = await load('tx.meta'));
    expect(metadata['partition-specs'].find((s) => s['spec-id'] === metadata['default-spec-id'])!.fields.map((f) => f.transform)).toEqual(['bucket[4]']);

    expect((await commit(ctx, [updateProperties({ 'team.owner': 'ops' }, ['doomed.key'])])).status).toBe('committed');
    ({ metadata } = await load('tx.meta'));
    expect(metadata.properties['team.owner']).toBe('ops');
    expect(metadata.properties['doomed.key']).toBeUndefined();

    expect((await commit(ctx, [expireSnapshots([first])])).status).toBe('committed');
    ({ metadata } = await load('tx.meta'));
    expect(metadata.snapshots.map((s) => s['snapshot-id'])).not.toContain(first);
    // The current snapshot cannot be expired: main points at it.
    const refused = await commit(ctx, [expireSnapshots([currentSnapshot(metadata)!['snapshot-id']])]);
    expect(refused.status).toBe('conflict');
    expect(refused.status === 'conflict' && refused.error.message).toMatch(/cannot be expired: branch main points at it/);
    expect(ids(await t.read())).toEqual([1, 2]);
  });

  it('a rollback by set-ref, followed by sync, leaves Delta equal to Iceberg', async () => {
    const t = fx.lake.table('tx.rollback');
    await t.append([{ id: 1 }]);
    await t.append([{ id: 2 }]);
    const ctx = contextOf('tx.rollback');
    const { metadata } = await load('tx.rollback');
    const older = metadata.snapshots[0]!['snapshot-id'];
    expect((await commit(ctx, [setRef('main', older)])).status).toBe('committed');
    expect(currentSnapshot((await load('tx.rollback')).metadata)!['snapshot-id']).toBe(older);
    await t.syncDelta();
    await expectBothEqual(t, [1]);
  });

  it('two actions are one commit', async () => {
    const t = fx.lake.table('tx.two');
    await t.append([{ id: 1 }]);
    const counting = contended(fx.lake.catalog, async () => undefined, 0);
    const ctx = contextOf('tx.two', counting);
    const before = await load('tx.two');
    const files = await filesOf(ctx, before.metadata, 'SELECT 2::BIGINT AS id');
    const outcome = await commit(ctx, [appendFiles(ctx, files), updateProperties({ 'batch.source': 'feed-1' })]);
    expect(outcome.status).toBe('committed');
    expect(counting.commits).toBe(1);
    const after = await load('tx.two');
    expect(after.metadata['metadata-log'].length).toBe(before.metadata['metadata-log'].length + 1);
    expect(after.metadata.properties['batch.source']).toBe('feed-1');
    // The snapshot carries the property set in the same commit: it was built on the updated metadata.
    expect(currentSnapshot(after.metadata)!['snapshot-id']).toBe(outcome.status === 'committed' && outcome.snapshot!['snapshot-id']);
    await expectBothEqual(t, [1, 2]);
  });

  it('a lost compare-and-swap applies the actions again on the winner’s metadata', async () => {
    const t = fx.lake.table('tx.lost');
    await t.append([{ id: 1 }]);
    const rival = fx.lake.table('tx.lost');
    const catalog = contended(fx.lake.catalog, async () => void (await rival.append([{ id: 100 }])), 1);
    const ctx = contextOf('tx.lost', catalog);
    const files = await filesOf(ctx, (await load('tx.lost')).metadata, 'SELECT 2::BIGINT AS id');
    const outcome = await commit(ctx, [appendFiles(ctx, files), updateProperties({ 'batch.source': 'feed-2' })]);
    expect(outcome.status).toBe('committed');
    expect(catalog.commits).toBe(2);
    const { metadata } = await load('tx.lost');
    const head = currentSnapshot(metadata)!;
    // Rebuilt on the rival's snapshot (sequence number 2), not on the one it was first built on.
    const rivals = metadata.snapshots.find((s) => s['sequence-number'] === 2)!;
    expect(head['sequence-number']).toBe(3);
    expect(head['parent-snapshot-id']).toBe(rivals['snapshot-id']);
    expect(metadata.properties['batch.source']).toBe('feed-2');
    await expectBothEqual(t, [1, 2, 100]);
    // The lost attempt's manifest list is gone: every manifest list in the folder is a snapshot's.
    const lists = listFiles(join(localPath(metadata.location), 'metadata')).filter((f) => f.includes('snap-'));
    expect(lists.length).toBe(metadata.snapshots.length);
  });

  it('says rerun when a file it removes is gone, and leaves none of its own files', async () => {
    const t = fx.lake.table('tx.rerun');
    await t.append([{ id: 1 }, { id: 2 }]);
    const ctx = contextOf('tx.rerun');
    const { metadata } = await load('tx.rerun');
    const [file] = await live(metadata);
    const replacement = await filesOf(ctx, metadata, 'SELECT 2::BIGINT AS id');
    await t.delete('id = 1'); // rewrites the file this change removes
    const metadataFiles = listFiles(join(localPath(metadata.location), 'metadata')).length;
    const outcome = await new Transaction(ctx, [rowDelta(ctx, { added: replacement, removeFiles: new Set([file!['file-path']]) })]).commit({ metadataLocation: '', metadata });
    expect(outcome.status).toBe('rerun');
    if (outcome.status !== 'rerun') return;
    expect(outcome.why).toMatch(/1 file\(s\) this change removes are no longer in the table/);
    // The base returned is the table after the delete: the caller prepares again on it.
    expect(currentSnapshot(outcome.base.metadata)!['snapshot-id']).toBe(currentSnapshot((await load('tx.rerun')).metadata)!['snapshot-id']);
    expect(currentSnapshot(outcome.base.metadata)!.summary['twinlake.operation']).toBe('delete');
    expect(listFiles(join(localPath(metadata.location), 'metadata')).length).toBe(metadataFiles);
    expect(ids(await t.read())).toEqual([2]);
  });

  it('takes its retry limit from commit.retry.num-retries: 0 is a conflict after one lost attempt', async () => {
    const t = fx.lake.table('tx.limit');
    await t.append([{ id: 1 }], { properties: { 'commit.retry.num-retries': '0' } });
    const rival = fx.lake.table('tx.limit');
    const catalog = contended(fx.lake.catalog, async () => void (await rival.append([{ id: 100 }])), 1);
    const ctx = contextOf('tx.limit', catalog);
    const files = await filesOf(ctx, (await load('tx.limit')).metadata, 'SELECT 2::BIGINT AS id');
    const outcome = await new Transaction(ctx, [appendFiles(ctx, files)], { what: 'write tx.limit' }).commit();
    expect(outcome.status).toBe('conflict');
    expect(catalog.commits).toBe(1);
    expect(outcome.status === 'conflict' && outcome.error.message).toMatch(
      /^write tx\.limit: gave up after 0 retries \(commit\.retry\.num-retries\) lost to concurrent commits; last: iceberg commit: requirement assert-ref-snapshot-id failed/,
    );
    expect(ids(await t.read())).toEqual([1, 100]);
  });

  it('a raw requirements + updates commit reports a failed requirement as a conflict, never rebased', async () => {
    const t = fx.lake.table('tx.raw');
    await t.append([{ id: 1 }]);
    const { metadata } = await load('tx.raw');
    const stale = currentSnapshot(metadata)!['snapshot-id'];
    await t.append([{ id: 2 }]);
    const counting = contended(fx.lake.catalog, async () => undefined, 0);
    const ctx = contextOf('tx.raw', counting);
    const raw = (snapshotId: bigint) =>
      rawCommit({
        requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': snapshotId }],
        updates: [{ action: 'set-properties', updates: { 'client.says': 'hello' } }],
      });
    const outcome = await new Transaction(ctx, [raw(stale)]).commit();
    expect(outcome.status).toBe('conflict');
    expect(outcome.status === 'conflict' && outcome.error.message).toMatch(/^iceberg commit: requirement assert-ref-snapshot-id failed: expected ref main at snapshot \d+, found snapshot \d+$/);
    expect(counting.commits).toBe(0);
    expect((await load('tx.raw')).metadata.properties['client.says']).toBeUndefined();
    // On the base its requirements describe, the same commit goes through.
    const fresh = currentSnapshot((await load('tx.raw')).metadata)!['snapshot-id'];
    expect((await new Transaction(ctx, [raw(fresh)]).commit()).status).toBe('committed');
    expect((await load('tx.raw')).metadata.properties['client.says']).toBe('hello');
  });

  it('alter commits through it too, honouring commit.retry.num-retries', async () => {
    // A property Delta mirrors is committed with a snapshot, which a concurrent append makes lose.
    const t = fx.lake.table('tx.alter');
    await t.append([{ id: 1 }], { properties: { 'commit.retry.num-retries': '0' } });
    const rival = fx.lake.table('tx.alter');
    const catalog = contended(fx.lake.catalog, async () => void (await rival.append([{ id: 100 }])), 1);
    const e = await errorOf(alterTable(contextOf('tx.alter', catalog), { set: { 'delta.checkpointInterval': '5' } }));
    expect(e.kind).toBe('commit-conflict');
    expect(e.message).toMatch(/^alter tx\.alter: gave up after 0 retries \(commit\.retry\.num-retries\) lost to concurrent commits; last: iceberg commit: requirement assert-ref-snapshot-id failed/);
    expect(catalog.commits).toBe(1);
    expect((await load('tx.alter')).metadata.properties['delta.checkpointInterval']).toBeUndefined();
    // With a retry left, the lost attempt is applied again on the rival's metadata.
    await t.alter({ set: { 'commit.retry.num-retries': '1' } });
    const again = contended(fx.lake.catalog, async () => void (await rival.append([{ id: 101 }])), 1);
    const r = await alterTable(contextOf('tx.alter', again), { set: { 'delta.checkpointInterval': '5' } });
    expect(r.changed).toEqual(['delta.checkpointInterval']);
    expect(again.commits).toBe(2);
    const { metadata } = await load('tx.alter');
    expect(metadata.properties['delta.checkpointInterval']).toBe('5');
    expect(currentSnapshot(metadata)!['snapshot-id']).toBe(r.snapshotId);
    await expectBothEqual(t, [1, 100, 101]);
  });

  it('commits a Delta-only table through the same loop: a taken version is retried on the next', async () => {
    const t = fx.lake.table('tx.deltaonly');
    await t.append([{ id: 1 }], { formats: ['delta'] });
    const location = joinUri(fx.lake.warehouse, 'tx', 'deltaonly');
    const ctx = { ...contextOf('tx.deltaonly') };
    let attempts = 0;
    const outcome = await new DeltaTransaction(ctx, location, [
      {
        async apply({ snapshot, version, nowMs }) {
          // A concurrent writer takes the version this attempt is about to write.
          if (attempts++ === 0) await t.append([{ id: 2 }]);
          return { status: 'apply', actions: [{ commitInfo: { timestamp: nowMs, operation: 'SET TBLPROPERTIES', operationParameters: {} } }, { metaData: { ...snapshot!.metadata, configuration: { ...snapshot!.metadata.configuration, 'team.owner': `v${version}` } } }] };
        },
      },
    ]).commit();
    expect(outcome).toMatchObject({ status: 'committed', version: 2, created: false });
    expect(attempts).toBe(2);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2]);
    expect((await loadDeltaSnapshot(ctx, location))!.metadata.configuration['team.owner']).toBe('v2');
  });

  it('a Delta-only table’s commit.retry.num-retries=0 makes a taken version a conflict', async () => {
    const t = fx.lake.table('tx.deltalimit');
    await t.append([{ id: 1 }], { formats: ['delta'], properties: { 'commit.retry.num-retries': '0' } });
    const location = joinUri(fx.lake.warehouse, 'tx', 'deltalimit');
    let attempts = 0;
    const outcome = await new DeltaTransaction(contextOf('tx.deltalimit'), location, [
      {
        async apply({ nowMs }) {
          if (attempts++ === 0) await t.append([{ id: 2 }]);
          return { status: 'apply', actions: [{ commitInfo: { timestamp: nowMs, operation: 'WRITE', operationParameters: {} } }] };
        },
      },
    ], { what: 'delta: write to tx.deltalimit' }).commit();
    expect(outcome.status).toBe('conflict');
    expect(attempts).toBe(1);
    expect(outcome.status === 'conflict' && outcome.error.message).toBe(
      'delta: write to tx.deltalimit: gave up after 0 retries (commit.retry.num-retries) lost to concurrent commits; last: version 1 was taken by a concurrent writer',
    );
    expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2]);
  });
});
