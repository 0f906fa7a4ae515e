import type { Snapshot } from '../iceberg/types.ts';

/**
 * The snapshot summary entries that tie an Iceberg snapshot to the Delta log (DESIGN.md §1).
 * A snapshot Twinlake commits names the Delta version expected to mirror it (`delta-version`); a
 * snapshot of another engine names none, and a version written to follow a rollback mirrors an
 * older snapshot again, so only the log (`commitInfo.icebergSnapshotId`) says which version
 * mirrors which snapshot: `delta-version` is where to look first, never the mapping itself.
 */
export const DELTA_VERSION_KEY = 'delta-version';

/**
 * Set on a snapshot (and every later one) once the table has row-level deletes: from the Delta
 * version mirroring the first such snapshot on, the Delta protocol carries the `deletionVectors`
 * feature. Table features are never dropped, so the flag is inherited, not recomputed.
 */
export const DELTA_DV_KEY = 'twinlake.delta.deletion-vectors';

/**
 * What a snapshot's change was, beyond Iceberg's append/overwrite/delete: `merge`, `delete` (by
 * predicate) or `alter` (table properties or formats changed), with its parameters as JSON
 * (`OPERATION_PARAMETERS_KEY`). The Delta version mirroring the snapshot takes Delta's own name
 * and parameters for it (MERGE, DELETE with its predicate, SET TBLPROPERTIES), so its history reads
 * like any Delta writer's.
 */
export const OPERATION_KEY = 'twinlake.operation';
export const OPERATION_PARAMETERS_KEY = 'twinlake.operation-parameters';

/**
 * Set on the snapshot that added Delta to an Iceberg-only table: its Delta version (0) holds the
 * whole live state of the table, and the versions before it do not exist.
 */
export const DELTA_START_KEY = 'twinlake.delta.start';

/** `compaction`: maintenance rewrote files (Iceberg `replace`, Delta OPTIMIZE), so every history shows it as maintenance. */
export type TableOperation = 'merge' | 'delete' | 'alter' | 'compaction';

/** The summary entries naming a snapshot's operation and its (Delta-style) parameters. */
export function operationSummary(operation: TableOperation, parameters: Record<string, string>): Record<string, string> {
  return { [OPERATION_KEY]: operation, [OPERATION_PARAMETERS_KEY]: JSON.stringify(parameters) };
}

export function deletionVectorsOn(snapshot: Snapshot | undefined): boolean {
  return snapshot?.summary[DELTA_DV_KEY] === 'true';
}

export function deltaVersionOf(snapshot: Snapshot): number | undefined {
  const raw = snapshot.summary[DELTA_VERSION_KEY];
  return raw === undefined ? undefined : Number(raw);
}

/** The Delta version the next snapshot on top of `parent` mirrors, as the parent's summary says. */
export function nextDeltaVersion(parent: Snapshot | undefined): number {
  if (!parent) return 1;
  const v = deltaVersionOf(parent);
  return v === undefined ? 1 : v + 1;
}
