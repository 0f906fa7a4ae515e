import { isTwinlakeError } from '../../core/errors.ts';
import { newSnapshotId } from '../../core/ids.ts';
import { currentSchema, currentSnapshot, snapshotById } from '../../format/iceberg/table-metadata.ts';
import type { DataFile, Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import { checkRequirements, type TableRequirement, type TableUpdate } from '../../format/iceberg/updates.ts';
import type { TableCommit } from '../../catalog/catalog.ts';
import { DELTA_DV_KEY, DELTA_START_KEY, DELTA_VERSION_KEY, deletionVectorsOn } from '../../format/dual/summary-keys.ts';
import { nextDeltaVersionAfter, rememberChanges } from '../delta/delta-projection.ts';
import { planSchema, rebasePlan, type SchemaPlan } from '../write/schema-plan.ts';
import { forgetAvroFiles } from './manifest-io.ts';
import { SnapshotProducer, type RowDeletesBasis, type SnapshotChange } from './snapshot-producer.ts';
import type { TableContext } from '../table-context.ts';
import { tableFormats } from '../../format/dual/table-properties.ts';
import type { ActionBase, ActionResult, TableAction } from './transaction.ts';
import { TWINLAKE_VERSION } from '../../format/dual/version.ts';

/**
 * The actions of a Transaction (transaction.ts), each re-applied on every attempt's base. The
 * snapshot actions build their snapshot with a SnapshotProducer: the manifests of what they add
 * are written once and reused by every attempt; what an attempt alone wrote (the manifest list,
 * rewritten manifests) is removed when it loses, everything when the transaction ends
 * uncommitted, nothing when the outcome is unknown.
 */

/** A snapshot on the attempt's metadata: the parent is its current snapshot. */
class SnapshotAction implements TableAction {
  private readonly producer: SnapshotProducer;
  private attemptFiles: string[] = [];

  constructor(
    private readonly ctx: TableContext,
    change: SnapshotChange,
  ) {
    this.producer = new SnapshotProducer(ctx.io, newSnapshotId(), change);
  }

  get snapshotId(): bigint {
    return this.producer.snapshotId;
  }

  async apply({ ctx, loaded, metadata, nowMs, summary }: ActionBase): Promise<ActionResult> {
    const parent = currentSnapshot(metadata);
    let produced;
    try {
      const extra = summaryExtra(ctx, metadata, loaded && metadata, parent, this.producer.change).then((e) => ({ ...e, ...summary }));
      // Settled by produce, or left unawaited when produce fails first: never unhandled.
      extra.catch(() => undefined);
      // The catalog writes its metadata file while the manifests are fsynced, and moves its
      // pointer only once both are durable (CommitOptions.durable).
      produced = await this.producer.produce(metadata, nowMs, { schema: currentSchema(metadata), summaryExtra: extra, deferDurable: true });
    } catch (e) {
      // A file this change rewrites was removed by a concurrent commit: prepare it again.
      if (isTwinlakeError(e, 'commit-conflict')) return { status: 'rerun', why: e.message };
      throw e;
    }
    this.attemptFiles = produced.attemptFiles;
    if (produced.changes) rememberChanges(ctx.io, this.producer.snapshotId, produced.changes);
    return {
      status: 'apply',
      durable: produced.durable,
      // Manifests are written against the schema and the default spec: both must still hold.
      requirements: [
        { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent ? parent['snapshot-id'] : null },
        { type: 'assert-current-schema-id', 'current-schema-id': metadata['current-schema-id'] },
        { type: 'assert-default-spec-id', 'default-spec-id': metadata['default-spec-id'] },
      ],
      updates: [
        { action: 'add-snapshot', snapshot: produced.snapshot },
        { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': this.producer.snapshotId },
      ],
    };
  }

  async lost(): Promise<void> {
    await this.producer.settled();
    forgetAvroFiles(this.ctx.io, this.attemptFiles);
    await this.ctx.io.deleteQuietly(this.attemptFiles);
    this.attemptFiles = [];
  }

  abandon(): Promise<void> {
    return this.producer.abandon();
  }
}

/** What a snapshot's summary records beyond its files: the engine, and the Delta version mirroring it. */
async function summaryExtra(
  ctx: TableContext,
  metadata: TableMetadata,
  base: TableMetadata | undefined,
  parent: Snapshot | undefined,
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

/** Appends data files (Iceberg `append`). */
export function appendFiles(ctx: TableContext, added: DataFile[], summary?: Record<string, string>): TableAction {
  return new SnapshotAction(ctx, { operation: 'append', added, replaceAll: false, ...(summary ? { summary } : {}) });
}

/** Replaces every live file of the table with `added` (Iceberg `overwrite`). */
export function overwriteFiles(ctx: TableContext, added: DataFile[]): TableAction {
  return new SnapshotAction(ctx, { operation: 'overwrite', added, replaceAll: true });
}

/**
 * A row-level change (merge, delete): data files removed and added, delete files added. With
 * `rowDeletes`, a concurrent commit that changed the deletes of a touched file makes it `rerun`.
 */
export function rowDelta(
  ctx: TableContext,
  change: { added: DataFile[]; removeFiles?: ReadonlySet<string>; addedDeletes?: DataFile[]; rowDeletes?: RowDeletesBasis; summary?: Record<string, string> },
): TableAction {
  const changesRows = (change.removeFiles?.size ?? 0) > 0 || (change.addedDeletes?.length ?? 0) > 0;
  const operation = !changesRows ? 'append' : change.added.length ? 'overwrite' : 'delete';
  return new SnapshotAction(ctx, { ...change, operation, replaceAll: false });
}

/**
 * Compaction: `added` hold the same rows as the removed files (Iceberg `replace`; its Delta
 * version's adds and removes carry `dataChange: false`).
 */
export function replaceFiles(ctx: TableContext, change: { removeFiles: ReadonlySet<string>; added: DataFile[]; rowDeletes?: RowDeletesBasis; summary?: Record<string, string> }): TableAction {
  return new SnapshotAction(ctx, { ...change, operation: 'replace', replaceAll: false });
}

/** A snapshot of any change (alter's and register's, which record what Delta must see). */
export function snapshotOf(ctx: TableContext, change: SnapshotChange): TableAction {
  return new SnapshotAction(ctx, change);
}

/**
 * The schema and partitioning a batch was encoded with (SchemaPlan), rebased on the attempt's
 * metadata: the schema and spec updates it needs, or `rerun` when its columns or spec no longer
 * fit. Nothing when the transaction creates the table with the plan's metadata.
 */
export function updateSchema(ctx: TableContext, plan: SchemaPlan, opts: { partition?: string } = {}): TableAction {
  return {
    async apply({ loaded, metadata }) {
      if (!loaded) return { status: 'apply', requirements: [], updates: [] };
      const rebased = rebasePlan(ctx, plan, metadata, { partition: opts.partition });
      if (!rebased) return { status: 'rerun', why: 'a concurrent commit changed the schema or partitioning this batch was encoded with' };
      return { status: 'apply', requirements: rebased.requirements, updates: rebased.updates };
    },
  };
}

/** Evolves the default partition spec to `partition` (`day(ts), bucket(16, id)`); nothing when it is the spec already. */
export function updatePartitionSpec(ctx: TableContext, partition: string): TableAction {
  return {
    async apply({ metadata }) {
      const plan = planSchema(ctx, metadata, currentSchema(metadata), { partition });
      return {
        status: 'apply',
        requirements: [
          { type: 'assert-default-spec-id', 'default-spec-id': metadata['default-spec-id'] },
          { type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': metadata['last-partition-id'] },
        ],
        updates: plan.specUpdates,
      };
    },
  };
}

/** Sets and removes table properties (values are checked by the caller, e.g. alter). */
export function updateProperties(set: Record<string, string>, remove: string[] = []): TableAction {
  return {
    async apply({ metadata }) {
      const updates: TableUpdate[] = [];
      if (Object.keys(set).length) updates.push({ action: 'set-properties', updates: set });
      const removals = remove.filter((k) => k in metadata.properties);
      if (removals.length) updates.push({ action: 'remove-properties', removals });
      return { status: 'apply', requirements: [{ type: 'assert-table-uuid', uuid: metadata['table-uuid'] }], updates };
    },
  };
}

/**
 * Removes snapshots from the metadata (Iceberg `remove-snapshots`); their files are left to the
 * caller. Snapshots already gone are skipped; one a ref points at is refused (`conflict`).
 */
export function expireSnapshots(snapshotIds: readonly bigint[]): TableAction {
  return {
    async apply({ metadata }) {
      const present = snapshotIds.filter((id) => snapshotById(metadata, id) !== undefined);
      for (const [name, ref] of Object.entries(metadata.refs)) {
        if (present.includes(ref['snapshot-id'])) return { status: 'conflict', why: `iceberg: snapshot ${ref['snapshot-id']} cannot be expired: ${ref.type} ${name} points at it` };
      }
      return {
        status: 'apply',
        requirements: [{ type: 'assert-table-uuid', uuid: metadata['table-uuid'] }],
        updates: present.length ? [{ action: 'remove-snapshots', 'snapshot-ids': present }] : [],
      };
    },
  };
}

/**
 * Points a ref at an existing snapshot (a rollback when it is an ancestor of `main`); the ref
 * must not have moved since this attempt's base.
 */
export function setRef(name: string, snapshotId: bigint, type: 'branch' | 'tag' = 'branch'): TableAction {
  return {
    async apply({ metadata }) {
      if (!snapshotById(metadata, snapshotId)) return { status: 'conflict', why: `iceberg: cannot set ${type} ${name} to snapshot ${snapshotId}: the table has no such snapshot` };
      const current = metadata.refs[name];
      return {
        status: 'apply',
        requirements: [{ type: 'assert-ref-snapshot-id', ref: name, 'snapshot-id': current ? current['snapshot-id'] : null }],
        updates: current?.['snapshot-id'] === snapshotId && current.type === type ? [] : [{ action: 'set-snapshot-ref', 'ref-name': name, type, 'snapshot-id': snapshotId }],
      };
    },
  };
}

/**
 * A commit as a REST catalog server receives it: its requirements are checked on every
 * attempt's base and, failing there, the commit is a `conflict` — never rebased, since the client
 * built its updates on the state the requirements describe.
 */
export function rawCommit(commit: TableCommit): TableAction {
  return {
    async apply({ metadata }) {
      const requirements: TableRequirement[] = commit.requirements;
      try {
        checkRequirements(metadata, requirements);
      } catch (e) {
        if (isTwinlakeError(e, 'commit-conflict')) return { status: 'conflict', why: e.message };
        throw e;
      }
      return { status: 'apply', requirements, updates: commit.updates };
    },
  };
}
