import { dataInvalid, TwinlakeError } from '../../core/errors.ts';
import type { FileIO } from '../../io/file-io.ts';
import type { Action } from '../../format/delta/actions.ts';
import { commitPath, encodeCommit, parseCommit } from '../../format/delta/actions.ts';
import { findCommitInfo } from '../../format/delta/replay.ts';
import { snapshotById } from '../../format/iceberg/table-metadata.ts';
import type { DataFile, ManifestEntry, ManifestFile, Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import { type DeltaHead, planCatchUp } from '../../format/dual/catch-up-plan.ts';
import {
  creationActions,
  type DeleteFileDv,
  type DeltaLogState,
  encodeSnapshotVersion,
  type EncodedDeltaVersion,
  followedInLineage,
  type LiveDataFile,
  liveDeleteFiles,
  projectJump,
  projectSnapshot,
  type SnapshotChanges,
} from '../../format/dual/projection.ts';
import { DELTA_START_KEY, deltaVersionOf, nextDeltaVersion } from '../../format/dual/summary-keys.ts';
import { readManifestEntries, readManifestList } from '../commit/manifest-io.ts';
import { headOfActions, readDeltaHead, readDeltaSnapshot, type WrittenHead } from './delta-log.ts';
import { liveFiles } from '../read/iceberg-scan.ts';
import { deltaDescriptor } from '../merge/row-deletes.ts';

/**
 * Keeps the Delta log a projection of the Iceberg lineage (DESIGN.md §1): reads what the pure
 * rules in src/format/dual/projection.ts need (the manifests a snapshot wrote, the live files,
 * deletion vector descriptors, the newest Delta commit) and writes the versions they return.
 */

/**
 * What the snapshots built through each FileIO changed, by snapshot ID, as their producer handed
 * it over (the newest few): the Delta version mirroring a snapshot this process just committed
 * need not decode the manifests it wrote (100,000 entries for a large add-files). A rebuild of
 * the snapshot on a newer parent replaces its entry; the one committed is the last built.
 */
const producedChanges = new WeakMap<FileIO, Map<bigint, SnapshotChanges>>();
const PRODUCED_KEPT = 8;

export function rememberChanges(io: FileIO, snapshotId: bigint, changes: SnapshotChanges): void {
  let byId = producedChanges.get(io);
  if (!byId) producedChanges.set(io, (byId = new Map()));
  byId.delete(snapshotId);
  byId.set(snapshotId, changes);
  for (const id of byId.keys()) {
    if (byId.size <= PRODUCED_KEPT) break;
    byId.delete(id);
  }
}

/**
 * The files a snapshot added and removed, read from the manifests it wrote; for row-level deletes
 * also the data files they apply to and their Delta DV descriptors.
 */
export async function snapshotChanges(io: FileIO, metadata: TableMetadata, snapshot: Snapshot): Promise<SnapshotChanges> {
  const known = producedChanges.get(io)?.get(snapshot['snapshot-id']);
  if (known) return known;
  const out = { added: [] as DataFile[], removed: [] as DataFile[], addedDeletes: [] as DataFile[], removedDeletes: [] as DataFile[], deleteTargets: new Map<string, DataFile>() };
  const id = snapshot['snapshot-id'];
  const manifests = await readManifestList(io, snapshot['manifest-list'], snapshot['snapshot-id']);
  const read = new Map<string, Promise<ManifestEntry[]>>();
  const entriesOf = (m: ManifestFile) => {
    if (!read.has(m['manifest-path'])) read.set(m['manifest-path'], readManifestEntries(io, m, metadata));
    return read.get(m['manifest-path'])!;
  };
  // Only manifests this snapshot wrote with ADDED or DELETED entries say what it changed (a
  // manifest merged from older ones holds EXISTING entries only).
  const own = manifests.filter((m) => m['added-snapshot-id'] === id && m['added-files-count'] + m['deleted-files-count'] > 0);
  for (const [i, entries] of (await Promise.all(own.map(entriesOf))).entries()) {
    const m = own[i]!;
    for (const e of entries) {
      if (e['snapshot-id'] !== id || e.status === 0) continue;
      const target = m.content === 0 ? (e.status === 1 ? out.added : out.removed) : e.status === 1 ? out.addedDeletes : out.removedDeletes;
      target.push(e['data-file']);
    }
  }
  const deletes = [...out.addedDeletes, ...out.removedDeletes];
  const changes = (addedDeletes: DeleteFileDv[], removedDeletes: DeleteFileDv[]): SnapshotChanges => ({
    added: out.added,
    removed: out.removed,
    addedDeletes,
    removedDeletes,
    deleteTargets: [...out.deleteTargets.values()],
  });
  if (deletes.length === 0) return changes([], []);
  const changed = new Set([...out.added, ...out.removed].map((f) => f['file-path']));
  const targets = new Set(deletes.map((d) => d['referenced-data-file']!).filter((p) => p !== undefined && !changed.has(p)));
  if (targets.size > 0) {
    for (const entries of await Promise.all(manifests.filter((m) => m.content === 0).map(entriesOf))) {
      for (const e of entries) {
        const path = e['data-file']['file-path'];
        if (e.status !== 2 && targets.has(path)) out.deleteTargets.set(path, e['data-file']);
      }
    }
    const lost = [...targets].filter((p) => !out.deleteTargets.has(p));
    if (lost.length > 0) throw dataInvalid(`delta projection: snapshot ${id} has deletes for ${lost[0]}, which is not a live data file`);
  }
  const withDv = async (files: DataFile[]) => {
    const list: DeleteFileDv[] = [];
    for (const file of files) list.push({ file, deletionVector: await deltaDescriptor(io, metadata.location, file) });
    return list;
  };
  return changes(await withDv(out.addedDeletes), await withDv(out.removedDeletes));
}

export interface CatchUpResult {
  /** The Delta version that mirrors the target snapshot (or 0 for a table without snapshots). */
  version: number;
  /** Versions this call wrote (others may have been written concurrently by another writer). */
  written: number[];
}

/**
 * The Delta version the next snapshot on top of `parent` will be mirrored by: the one after the
 * parent's, as the log holds it. Without a Delta log beyond the parent's own version that is the
 * parent's `delta-version` + 1 (one existence check); otherwise (the parent was mirrored later by
 * a sync: a rollback target, another engine's snapshot) the newest Delta version and what
 * catch-up would still write for the parent decide.
 */
export async function nextDeltaVersionAfter(io: FileIO, metadata: TableMetadata, parent: Snapshot | undefined): Promise<number> {
  if (!parent) return 1;
  const own = deltaVersionOf(parent);
  if (own !== undefined && !(await io.exists(`${metadata.location}/${commitPath(own + 1)}`))) return own + 1;
  const { store, key } = io.storeAt(metadata.location);
  const head = await readDeltaHead(store, key, own);
  if (!head) return nextDeltaVersion(parent);
  const plan = planCatchUp(metadata, head, parent);
  const pending = plan.kind === 'replay' ? plan.snapshots.length : plan.kind === 'jump' ? 1 : 0;
  return head.version + pending + 1;
}

/**
 * The Delta version that mirrors `snapshot`, derived from Iceberg as catch-up writes it: the
 * start of the log for the snapshot that added Delta, else what the snapshot changed on top of
 * the version its parent's lineage implies.
 */
export async function snapshotVersion(io: FileIO, metadata: TableMetadata, snapshot: Snapshot, version: number): Promise<Action[]> {
  if (snapshot.summary[DELTA_START_KEY] === 'true') return projectSnapshot({ metadata, snapshot, follows: null, live: await liveDataFiles(io, metadata, snapshot) }).actions;
  return projectSnapshot({ metadata, snapshot, follows: followedInLineage(metadata, snapshot, version - 1), changes: await snapshotChanges(io, metadata, snapshot) }).actions;
}

/**
 * The newest Delta commit written through each FileIO, by table location. The next commit's
 * catch-up finds the head of the log where it expects it; when that is the commit this process
 * wrote (the same version and size), what it mirrors is known without reading it back.
 */
const writtenHeads = new WeakMap<FileIO, Map<string, WrittenHead>>();

function rememberHead(io: FileIO, location: string, written: WrittenHead): void {
  let heads = writtenHeads.get(io);
  if (!heads) writtenHeads.set(io, (heads = new Map()));
  const held = heads.get(location);
  if (!held || held.head.version < written.head.version) heads.set(location, written);
}

/**
 * Makes the newest Delta version mirror the target snapshot (the current one by default), as
 * `planCatchUp` says: replaying the snapshots in between, or one version that removes and adds
 * what differs. Which snapshot a version mirrors is read from the log
 * (`commitInfo.icebergSnapshotId`), never assumed from a snapshot's `delta-version`; versions are
 * written create-only after the newest one, and a version another writer took first is fine when
 * it mirrors the same snapshot (else the plan is made again on the log as it now is).
 */
export async function catchUpDelta(
  io: FileIO,
  metadata: TableMetadata,
  opts: { target?: Snapshot; afterWrite?: (version: number) => Promise<void>; warn?: (message: string) => void } = {},
): Promise<CatchUpResult> {
  const location = metadata.location;
  const logFile = (v: number) => `${location}/${commitPath(v)}`;
  const target = opts.target ?? (metadata['current-snapshot-id'] != null ? snapshotById(metadata, metadata['current-snapshot-id']) : undefined);
  const { store, key } = io.storeAt(location);
  const written: number[] = [];
  const warned = new Set<number>();

  /** Writes a version; false when another writer took it for a different snapshot. */
  const write = async ({ version, commitInfo, bytes }: EncodedDeltaVersion, snapshotId?: bigint): Promise<boolean> => {
    if (await io.writeIfAbsent(logFile(version), bytes)) {
      rememberHead(io, location, { head: headOfActions(version, commitInfo ? [{ commitInfo }] : []), size: bytes.length });
      written.push(version);
      await opts.afterWrite?.(version);
      return true;
    }
    const theirs = await io.readText(logFile(version));
    const mirrored = theirs.trim() === '' ? undefined : findCommitInfo(parseCommit(theirs, commitPath(version)))?.icebergSnapshotId;
    return snapshotId === undefined ? mirrored === undefined && theirs.trim() !== '' : mirrored !== undefined && BigInt(mirrored as bigint) === snapshotId;
  };

  for (let attempt = 0; attempt < 5; attempt++) {
    const head = await readDeltaHead(store, key, target && deltaVersionOf(target), writtenHeads.get(io)?.get(location));
    if (head?.empty && !warned.has(head.version)) {
      warned.add(head.version);
      opts.warn?.(
        `delta: ${logFile(head.version)} is empty (expected the actions of version ${head.version}); its changes are lost to Delta readers, the next version restores the live files of iceberg snapshot ${target?.['snapshot-id'] ?? 'none'}`,
      );
    }
    const plan = planCatchUp(metadata, head, target);
    if (plan.kind === 'up-to-date') return { version: head?.version ?? 0, written };
    if (plan.kind === 'behind') return { version: (target && deltaVersionOf(target)) ?? head!.version, written };
    let next = head ? head.version + 1 : 0;
    let lost = false;
    if (plan.kind === 'replay' && plan.start) {
      const start = encodeSnapshotVersion({ metadata, snapshot: plan.start, follows: null, live: await liveDataFiles(io, metadata, plan.start) });
      lost = !(await write(start, plan.start['snapshot-id']));
      next = 1;
    } else if (plan.creation) {
      const created = plan.kind === 'replay' && plan.snapshots.length ? plan.snapshots[0]!['timestamp-ms'] : metadata['last-updated-ms'];
      lost = !(await write(encoded(0, creationActions(metadata, created))));
      next = 1;
    }
    if (!lost && plan.kind === 'replay') {
      for (const s of plan.snapshots) {
        const v = encodeSnapshotVersion({ metadata, snapshot: s, follows: followedInLineage(metadata, s, next - 1), changes: await snapshotChanges(io, metadata, s) });
        if (!(await write(v, s['snapshot-id']))) {
          lost = true;
          break;
        }
        next++;
      }
    } else if (!lost && plan.kind === 'jump') {
      const v = projectJump({ metadata, target: target!, live: await liveDataFiles(io, metadata, target!), delta: await logState(io, location, next - 1, head) });
      lost = !(await write(encoded(v.version, v.actions), target!['snapshot-id']));
      next++;
    }
    if (!lost) return { version: next - 1, written };
  }
  throw new TwinlakeError('commit-conflict', `delta projection: the log of ${location} kept moving while catching up with iceberg snapshot ${target?.['snapshot-id']}`);
}

/** A version of actions as its commit file's bytes. */
function encoded(version: number, actions: Action[]): EncodedDeltaVersion {
  const commitInfo = findCommitInfo(actions);
  return { version, ...(commitInfo ? { commitInfo } : {}), bytes: encodeCommit(actions) };
}

/**
 * The Delta log as a jump after version `version` finds it: its live files, protocol and
 * metaData (none when the log holds only what this catch-up just created).
 */
async function logState(io: FileIO, location: string, version: number, head: DeltaHead | undefined): Promise<DeltaLogState> {
  if (!head) return { version, files: [] };
  const { store, key } = io.storeAt(location);
  const before = await readDeltaSnapshot(store, key);
  return {
    version,
    files: before.files,
    protocol: before.protocol,
    metadata: before.metadata,
    ...(head.timestampMs !== undefined ? { timestampMs: head.timestampMs } : {}),
    ...(head.icebergSequenceNumber !== undefined ? { icebergSequenceNumber: head.icebergSequenceNumber } : {}),
  };
}

/** Every live data file of `snapshot` with the Delta deletion vector of its delete file. */
async function liveDataFiles(io: FileIO, metadata: TableMetadata, snapshot: Snapshot): Promise<LiveDataFile[]> {
  const out: LiveDataFile[] = [];
  for (const { file, deleteFile } of liveDeleteFiles(metadata, await liveFiles(io, metadata, snapshot))) {
    out.push(deleteFile ? { file, deletionVector: await deltaDescriptor(io, metadata.location, deleteFile) } : { file });
  }
  return out;
}
