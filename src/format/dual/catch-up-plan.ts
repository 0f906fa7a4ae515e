import type { Snapshot, TableMetadata } from '../iceberg/types.ts';
import { DELTA_START_KEY } from './summary-keys.ts';

/**
 * The newest commit of a Delta log and the Iceberg snapshot it mirrors (its
 * `commitInfo.icebergSnapshotId`, DESIGN.md §1): what catch-up compares with the current Iceberg
 * snapshot. `empty` marks a zero-byte commit file (a commit emptied by a crash or a bad copy):
 * Delta readers take it for a commit without actions, so it mirrors nothing.
 */
export interface DeltaHead {
  version: number;
  /** Undefined for the creation version, a commit of another writer, or an empty commit. */
  icebergSnapshotId?: bigint;
  icebergSequenceNumber?: number;
  timestampMs?: number;
  empty: boolean;
}

/**
 * How the Delta log gets from the snapshot its newest version mirrors to the target snapshot:
 * - `up-to-date`: the newest version mirrors the target;
 * - `behind`: the log mirrors a snapshot newer than this metadata knows (another writer synced a
 *   later commit): nothing to write from here;
 * - `replay`: the target descends from the mirrored snapshot through snapshots that all still
 *   exist: one version per snapshot, oldest first (also when the log mirrors the table's creation
 *   and the lineage goes back to the first snapshot);
 * - `jump`: anything else (a rollback, a cherry-pick onto another lineage, parents expired, an
 *   emptied commit): one version that makes the live files equal the target's.
 * A missing log starts with version 0 (creation, or the snapshot that added Delta) and continues
 * the same way.
 */
export type CatchUpPlan =
  | { kind: 'up-to-date' }
  | { kind: 'behind' }
  | { kind: 'replay'; snapshots: Snapshot[]; creation: boolean; start?: Snapshot }
  | { kind: 'jump'; creation: boolean };

/** The plan for `target` given the newest Delta commit (pure: metadata and the head in, a plan out). */
export function planCatchUp(metadata: TableMetadata, head: DeltaHead | undefined, target: Snapshot | undefined): CatchUpPlan {
  if (!target) return head ? { kind: 'up-to-date' } : { kind: 'replay', snapshots: [], creation: true };
  const mirrored = head && !head.empty ? head.icebergSnapshotId : undefined;
  if (mirrored !== undefined && mirrored === target['snapshot-id']) return { kind: 'up-to-date' };
  if (mirrored !== undefined && !metadata.snapshots.some((s) => s['snapshot-id'] === mirrored)) {
    // Unknown here: expired (then the target moved on without it), or newer than this metadata.
    if (head!.icebergSequenceNumber !== undefined && head!.icebergSequenceNumber > metadata['last-sequence-number']) return { kind: 'behind' };
  }
  // From creation: a log holding only the table's creation (version 0 mirrors no snapshot), or no
  // log at all. A later version that mirrors nothing (another Delta writer's) is jumped over.
  const fromCreation = !head || (head.version === 0 && !head.empty && mirrored === undefined);
  const chain: Snapshot[] = [];
  for (let s: Snapshot | undefined = target; s; ) {
    if (mirrored !== undefined && s['snapshot-id'] === mirrored) return { kind: 'replay', snapshots: chain.reverse(), creation: false };
    chain.push(s);
    if (!head && s.summary[DELTA_START_KEY] === 'true') {
      chain.pop();
      return { kind: 'replay', snapshots: chain.reverse(), creation: false, start: s };
    }
    const parentId: bigint | undefined = s['parent-snapshot-id'];
    if (parentId === undefined) {
      if (fromCreation) return { kind: 'replay', snapshots: chain.reverse(), creation: !head };
      break;
    }
    s = metadata.snapshots.find((x) => x['snapshot-id'] === parentId);
  }
  return { kind: 'jump', creation: !head };
}
