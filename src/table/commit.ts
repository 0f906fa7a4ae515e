import { isTwinlakeError, TwinlakeError } from '../core/errors.ts';
import { newSnapshotId } from '../core/ids.ts';
import { ensureNamespace, type LoadTableResult } from '../catalog/catalog.ts';
import { currentSchema, currentSnapshot } from '../spec/iceberg/table-metadata.ts';
import type { TableMetadata } from '../spec/iceberg/types.ts';
import { applyUpdates } from '../spec/iceberg/updates.ts';
import { DELTA_DV_KEY, DELTA_START_KEY, DELTA_VERSION_KEY, deletionVectorsOn, nextDeltaVersion } from './delta-projection.ts';
import { rebasePlan, type SchemaPlan } from './schema-plan.ts';
import { SnapshotProducer, type SnapshotChange } from './snapshot-producer.ts';
import type { TableContext } from './table-context.ts';
import { identString } from './table-context.ts';
import { tableFormats } from './table-properties.ts';
import { TWINLAKE_VERSION } from './version.ts';
import type { WriteOptions } from './writer.ts';

/**
 * The Iceberg half of a commit (DESIGN.md §1): a snapshot built on the newest metadata and
 * swapped in through the catalog; a lost compare-and-swap rebuilds it on the winner's metadata.
 */

const MAX_COMMIT_ATTEMPTS = 50;

export type CommitOutcome =
  | { status: 'committed'; metadata: TableMetadata; snapshot: NonNullable<ReturnType<typeof currentSnapshot>>; created: boolean }
  | { status: 'schema-moved'; loaded: LoadTableResult };

/**
 * Commits a snapshot change through the catalog, rebuilding it on the newest metadata when a
 * concurrent commit wins. 'schema-moved' means the batch must be prepared again: its columns or
 * partitioning changed underneath, or (for merges and deletes) a file it rewrites is gone.
 */
export async function commitChange(
  ctx: TableContext,
  plan: SchemaPlan,
  change: SnapshotChange,
  loaded: LoadTableResult | undefined,
  opts: WriteOptions,
): Promise<CommitOutcome> {
  const snapshotId = newSnapshotId();
  const producer = new SnapshotProducer(ctx.io, snapshotId, change);
  let committed = false;
  try {
    let base = loaded;
    for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
      if (attempt > 0) await backoff(attempt);
      if (!base && plan.newTable) {
        const outcome = await createWithSnapshot(ctx, plan, producer);
        if (outcome) {
          committed = true;
          return outcome;
        }
        base = await ctx.catalog.loadTable(ctx.ident); // someone else created it first
        continue;
      }
      if (!base) base = await ctx.catalog.loadTable(ctx.ident);
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
          summaryExtra: summaryExtra(metadataForSnapshot, parent, change),
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
        return { status: 'committed', metadata: result.metadata, snapshot: produced.snapshot, created: false };
      }
      await ctx.io.deleteQuietly(produced.attemptFiles);
      base = await ctx.catalog.loadTable(ctx.ident);
    }
    throw new TwinlakeError('commit-conflict', `write ${identString(ctx.ident)}: gave up after ${MAX_COMMIT_ATTEMPTS} attempts lost to concurrent commits`);
  } catch (e) {
    // The pointer may have moved to a snapshot naming these manifests: keep them (a stray file is
    // harmless; a missing one breaks the table).
    if (isTwinlakeError(e, 'commit-state-unknown')) committed = true;
    throw e;
  } finally {
    if (!committed) await producer.abandon();
  }
}

function summaryExtra(metadata: TableMetadata, parent: ReturnType<typeof currentSnapshot>, change: SnapshotChange): Record<string, string> {
  const extra: Record<string, string> = { 'engine-name': 'twinlake', 'engine-version': TWINLAKE_VERSION };
  if (tableFormats(metadata.properties).includes('delta')) {
    // The snapshot that adds Delta to an Iceberg table starts the Delta log (see DELTA_START_KEY).
    extra[DELTA_VERSION_KEY] = change.summary?.[DELTA_START_KEY] === 'true' ? '0' : String(nextDeltaVersion(parent));
    if (deletionVectorsOn(parent) || (change.addedDeletes?.length ?? 0) > 0) extra[DELTA_DV_KEY] = 'true';
  }
  return extra;
}

async function createWithSnapshot(ctx: TableContext, plan: SchemaPlan, producer: SnapshotProducer): Promise<CommitOutcome | undefined> {
  const base = plan.newTable!;
  const nowMs = Math.max(ctx.clock.nowMs(), base['last-updated-ms'] + 1);
  const produced = await producer.produce(base, nowMs, { schema: plan.schema, summaryExtra: summaryExtra(base, undefined, producer.change) });
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

function backoff(attempt: number): Promise<void> {
  const ms = Math.min(200, 5 * attempt) + Math.random() * 20 * Math.min(attempt, 5);
  return new Promise((r) => setTimeout(r, ms));
}
