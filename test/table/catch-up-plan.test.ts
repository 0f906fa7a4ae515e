import { describe, expect, it } from 'vitest';
import type { Snapshot, TableMetadata } from '../../src/format/iceberg/types.ts';
import { type DeltaHead, planCatchUp } from '../../src/format/dual/catch-up-plan.ts';

/** Snapshots 1..n in one lineage (ids 101, 102, …), with a main ref at `current`. */
function lineage(n: number, extra: Partial<Snapshot>[] = []): Snapshot[] {
  const out: Snapshot[] = [];
  for (let i = 1; i <= n; i++) {
    out.push({
      'snapshot-id': BigInt(100 + i),
      ...(i > 1 ? { 'parent-snapshot-id': BigInt(100 + i - 1) } : {}),
      'sequence-number': i,
      'timestamp-ms': 1000 * i,
      'manifest-list': `m${i}.avro`,
      summary: { operation: 'append' },
      ...(extra[i - 1] ?? {}),
    } as Snapshot);
  }
  return out;
}

const meta = (snapshots: Snapshot[], lastSequenceNumber = snapshots.length) =>
  ({ snapshots, 'last-sequence-number': lastSequenceNumber }) as unknown as TableMetadata;
const head = (version: number, snapshot?: number, extra: Partial<DeltaHead> = {}): DeltaHead => ({
  version,
  empty: false,
  ...(snapshot !== undefined ? { icebergSnapshotId: BigInt(100 + snapshot), icebergSequenceNumber: snapshot } : {}),
  ...extra,
});
const ids = (plan: ReturnType<typeof planCatchUp>) => (plan.kind === 'replay' ? plan.snapshots.map((s) => Number(s['snapshot-id']) - 100) : plan.kind);

describe('planCatchUp: from the snapshot the newest Delta version mirrors to the current one', () => {
  const s = lineage(5);
  it('is up to date when the newest version mirrors the target', () => {
    expect(planCatchUp(meta(s), head(5, 5), s[4]).kind).toBe('up-to-date');
  });
  it('replays the snapshots after the mirrored one, oldest first', () => {
    expect(ids(planCatchUp(meta(s), head(2, 2), s[4]))).toEqual([3, 4, 5]);
  });
  it('replays the whole lineage after a log holding only the creation, and after no log', () => {
    expect(ids(planCatchUp(meta(s), head(0), s[2]))).toEqual([1, 2, 3]);
    const fresh = planCatchUp(meta(s), undefined, s[1]);
    expect(fresh).toMatchObject({ kind: 'replay', creation: true });
    expect(ids(fresh)).toEqual([1, 2]);
  });
  it('jumps after a rollback: the target is an ancestor of the mirrored snapshot', () => {
    expect(planCatchUp(meta(s), head(5, 5), s[1])).toEqual({ kind: 'jump', creation: false });
  });
  it('jumps when a snapshot between the mirrored one and the target was expired', () => {
    const expired = s.filter((x) => x['snapshot-id'] !== 103n);
    expect(planCatchUp(meta(expired), head(2, 2), s[4]).kind).toBe('jump');
  });
  it('jumps when the newest commit is empty or mirrors nothing beyond the creation', () => {
    expect(planCatchUp(meta(s), head(3, undefined, { empty: true }), s[4]).kind).toBe('jump');
    expect(planCatchUp(meta(s), head(3), s[4]).kind).toBe('jump');
  });
  it('writes nothing when the log mirrors a snapshot newer than this metadata knows', () => {
    const older = meta(s.slice(0, 4), 4);
    expect(planCatchUp(older, head(5, 5), s[3]).kind).toBe('behind');
    // An expired mirrored snapshot is older than the metadata: a jump, not "behind".
    expect(planCatchUp(meta(s.slice(0, 3), 5), head(4, 4), s[2]).kind).toBe('jump');
  });
  it('starts the log at the snapshot that added Delta to an Iceberg table', () => {
    const started = lineage(4, [{}, { summary: { operation: 'append', 'twinlake.delta.start': 'true' } }]);
    const plan = planCatchUp(meta(started), undefined, started[3]);
    expect(plan).toMatchObject({ kind: 'replay', creation: false, start: started[1] });
    expect(ids(plan)).toEqual([3, 4]);
  });
});
