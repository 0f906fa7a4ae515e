import { isTwinlakeError } from '../core/errors.ts';
import { newSnapshotId } from '../core/ids.ts';
import { ensureNamespace, type LoadTableResult } from '../catalog/catalog.ts';
import { currentSchema, currentSnapshot } from '../format/iceberg/table-metadata.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';
import { applyUpdates } from '../format/iceberg/updates.ts';
import { nextDeltaVersionAfter } from './delta-projection.ts';
import { DELTA_DV_KEY, DELTA_START_KEY, DELTA_VERSION_KEY, deletionVectorsOn } from '../format/dual/summary-keys.ts';
import { rebasePlan, type SchemaPlan } from './schema-plan.ts';
import { SnapshotProducer, type SnapshotChange } from './snapshot-producer.ts';
import type { TableContext } from './table-context.ts';
import { identString } from './table-context.ts';
import { tableFormats } from '../format/dual/table-properties.ts';
import { CommitRetry, commitRetryPolicy } from './commit-retry.ts';
import { checkTxn, latestIcebergTxn, txnOutcome, txnSummary, type TxnResult } from '../format/dual/write-txn.ts';
import { TWINLAKE_VERSION } from '../format/dual/version.ts';
import type { WriteOptions } from './writer.ts';

/**
 * The Iceberg half of a commit (DESIGN.md §1): a snapshot built on the newest metadata and
 * swapped in through the catalog; a lost compare-and-swap rebuilds it on the winner's metadata.
 */

export type CommitOutcome =
  | { status: 'committed'; metadata: TableMetadata; snapshot: NonNullable<ReturnType<typeof currentSnapshot>>; created: boolean; txn?: TxnResult }
  | { status: 'schema-moved'; loaded: LoadTableResult }
  /** The write's `txn` names a batch the table already holds: nothing was committed. */
  | { status: 'already-committed'; loaded: LoadTableResult; txn: TxnResult };

/**
 * Commits a snapshot change through the catalog, rebuilding it on the newest metadata when a
 * concurrent commit wins; each lost attempt spends one retry of `retry` (the table's
 * `commit.retry.*` policy, shared with the caller's own loop). 'schema-moved' means the batch must
 * be prepared again: its columns or partitioning changed underneath, or (for merges and deletes) a
 * file it rewrites is gone. With `opts.txn`, every attempt first checks its fresh base: a batch
 * the table already holds is 'already-committed', so of two writers racing with one batch, the
 * loser finds the winner's snapshot and commits nothing.
 */
export async function commitChange(
  ctx: TableContext,
  plan: SchemaPlan,
  change: SnapshotChange,
  loaded: LoadTableResult | undefined,
  opts: WriteOptions,
  retry: CommitRetry = new CommitRetry(commitRetryPolicy(loaded?.metadata.properties ?? plan.newTable?.properties ?? {}), `write ${identString(ctx.ident)}`),
): Promise<CommitOutcome> {
  const snapshotId = newSnapshotId();
  const producer = new SnapshotProducer(ctx.io, snapshotId, change);
  const txn = opts.txn ? checkTxn(opts.txn, 'txn') : undefined;
  const txnEntries = txn ? txnSummary(txn) : {};
  let committed = false;
  try {
    let base = loaded;
    for (;;) {
      if (!base && plan.newTable) {
        const outcome = await createWithSnapshot(ctx, plan, producer, txnEntries);
        if (outcome) {
          committed = true;
          return txn ? { ...outcome, txn: txnOutcome(txn, undefined) } : outcome;
        }
        await retry.lost('another writer created the table first');
        base = await ctx.catalog.loadTable(ctx.ident);
        continue;
      }
      if (!base) base = await ctx.catalog.loadTable(ctx.ident);
      retry.use(commitRetryPolicy(base.metadata.properties));
      const latest = txn && latestIcebergTxn(base.metadata, txn.appId);
      const txnResult = txn && txnOutcome(txn, latest);
      if (txnResult?.status === 'already-committed') return { status: 'already-committed', loaded: base, txn: txnResult };
      const rebased = rebasePlan(ctx, plan, base.metadata, opts);
      if (!rebased) return { status: 'schema-moved', loaded: base };
      const { requirements } = rebased;
      const nowMs = Math.max(ctx.clock.nowMs(), base.metadata['last-updated-ms'] + 1);
      // Property changes committed with the snapshot (alter) decide what it carries, e.g. a Delta version.
      const updates = [...rebased.updates, ...(change.updates ?? [])];
      const metadataForSnapshot = change.updates?.length ? applyUpdates(rebased.metadataForSnapshot, change.updates, { nowMs }) : rebased.metadataForSnapshot;
      const parent = currentSnapshot(base.metadata);
      let produced;
      try {
        produced = await producer.produce(metadataForSnapshot, nowMs, {
          schema: currentSchema(metadataForSnapshot),
          summaryExtra: { ...(await summaryExtra(ctx, metadataForSnapshot, base.metadata, parent, change)), ...txnEntries },
        });
      } catch (e) {
        // A file this change rewrites was removed by a concurrent commit: prepare it again.
        if (isTwinlakeError(e, 'commit-conflict')) return { status: 'schema-moved', loaded: base };
        throw e;
      }
      const result = await ctx.catalog.commitTable(ctx.ident, {
        requirements,
        updates: [...updates, { action: 'add-snapshot', snapshot: produced.snapshot }, { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId }],
      });
      if (result.status === 'committed') {
        committed = true;
        return { status: 'committed', metadata: result.metadata, snapshot: produced.snapshot, created: false, ...(txnResult ? { txn: txnResult } : {}) };
      }
      await ctx.io.deleteQuietly(produced.attemptFiles);
      await retry.lost(result.reason);
      base = await ctx.catalog.loadTable(ctx.ident);
    }
  } catch (e) {
    // The pointer may have moved to a snapshot naming these manifests: keep them (a stray file is
    // harmless; a missing one breaks the table).
    if (isTwinlakeError(e, 'commit-state-unknown')) committed = true;
    throw e;
  } finally {
    if (!committed) await producer.abandon();
  }
}

async function summaryExtra(
  ctx: TableContext,
  metadata: TableMetadata,
  base: TableMetadata | undefined,
  parent: ReturnType<typeof currentSnapshot>,
  change: SnapshotChange,
): Promise<Record<string, string>> {
  const extra: Record<string, string> = { 'engine-name': 'twinlake', 'engine-version': TWINLAKE_VERSION };
  if (tableFormats(metadata.properties).includes('delta')) {
    // The snapshot that adds Delta to an Iceberg table starts the Delta log (see DELTA_START_KEY).
    const start = change.summary?.[DELTA_START_KEY] === 'true';
    extra[DELTA_VERSION_KEY] = start ? '0' : String(base ? await nextDeltaVersionAfter(ctx.io, base, parent) : 1);
    if (deletionVectorsOn(parent) || (change.addedDeletes?.length ?? 0) > 0) extra[DELTA_DV_KEY] = 'true';
  }
  return extra;
}

async function createWithSnapshot(
  ctx: TableContext,
  plan: SchemaPlan,
  producer: SnapshotProducer,
  txnEntries: Record<string, string>,
): Promise<Extract<CommitOutcome, { status: 'committed' }> | undefined> {
  const base = plan.newTable!;
  const nowMs = Math.max(ctx.clock.nowMs(), base['last-updated-ms'] + 1);
  const produced = await producer.produce(base, nowMs, { schema: plan.schema, summaryExtra: { ...(await summaryExtra(ctx, base, undefined, undefined, producer.change)), ...txnEntries } });
  const metadata = applyUpdates(
    base,
    [
      { action: 'add-snapshot', snapshot: produced.snapshot },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': produced.snapshot['snapshot-id'] },
    ],
    { nowMs },
  );
  try {
    await ensureNamespace(ctx.catalog, ctx.ident.namespace);
    const created = await ctx.catalog.createTable(ctx.ident, metadata);
    return { status: 'committed', metadata: created.metadata, snapshot: produced.snapshot, created: true };
  } catch (e) {
    if (isTwinlakeError(e, 'already-exists')) {
      await ctx.io.deleteQuietly(produced.attemptFiles);
      return undefined;
    }
    throw e;
  }
}
