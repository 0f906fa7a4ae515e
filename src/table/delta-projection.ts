import { dataInvalid, TwinlakeError, unsupported } from '../core/errors.ts';
import type { FileIO } from '../io/file-io.ts';
import type { Action, AddFile, CommitInfo, DeletionVectorDescriptor, Metadata, Protocol, RemoveFile } from '../format/delta/actions.ts';
import { commitPath, parseCommit, serializeCommit } from '../format/delta/actions.ts';
import { protocolFor, toDeltaSchema } from '../format/delta/schema.ts';
import { deltaStats } from '../format/parquet/stats.ts';
import { schemaById, snapshotById, specById } from '../format/iceberg/table-metadata.ts';
import { serializePartitionValue } from '../format/delta/partition-values.ts';
import type { LiteralValue } from '../format/scan-task.ts';
import type { DataFile, ManifestEntry, ManifestFile, Schema, Snapshot, TableMetadata } from '../format/iceberg/types.ts';
import { readManifestEntries, readManifestList } from './manifest-io.ts';
import { type DeltaSnapshot, deltaPath, fileKey, findCommitInfo } from '../format/delta/replay.ts';
import { applicableDeletes } from '../format/iceberg/scan.ts';
import { type DeltaHead, readDeltaHead, readDeltaSnapshot } from './delta-log.ts';
import { liveFiles } from './iceberg-scan.ts';
import { deleteFileKey } from '../format/iceberg/manifest.ts';
import { deltaDescriptor } from './row-deletes.ts';
import { intProp, Props, readPhysicalNames } from './table-properties.ts';
import { ENGINE_INFO } from './version.ts';
import { snapshotTxn } from './write-txn.ts';

/**
 * The Delta log as a deterministic projection of the Iceberg snapshot lineage (DESIGN.md §1).
 * Delta version 0 mirrors the table's creation; every later version mirrors one Iceberg snapshot,
 * which it names (`commitInfo.icebergSnapshotId`): that is the mapping. A snapshot Twinlake
 * commits also names the version expected to mirror it (`delta-version` in its summary); a
 * snapshot of another engine names none, and a version written to follow a rollback mirrors an
 * older snapshot again, so only the log says which version mirrors which snapshot.
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

export type TableOperation = 'merge' | 'delete' | 'alter';

/** The summary entries naming a snapshot's operation and its (Delta-style) parameters. */
export function operationSummary(operation: TableOperation, parameters: Record<string, string>): Record<string, string> {
  return { [OPERATION_KEY]: operation, [OPERATION_PARAMETERS_KEY]: JSON.stringify(parameters) };
}

/** Delta's operation name and parameters for the version mirroring `snapshot`. */
function deltaOperation(snapshot: Snapshot, partitionBy: string): { operation: string; operationParameters: Record<string, unknown>; blind: boolean } {
  const op = snapshot.summary[OPERATION_KEY];
  const raw = snapshot.summary[OPERATION_PARAMETERS_KEY];
  const params = raw ? (JSON.parse(raw) as Record<string, string>) : {};
  if (op === 'merge') return { operation: 'MERGE', operationParameters: params, blind: false };
  if (op === 'delete') return { operation: 'DELETE', operationParameters: params, blind: false };
  if (op === 'alter') return { operation: params.properties !== undefined ? 'SET TBLPROPERTIES' : 'UNSET TBLPROPERTIES', operationParameters: params, blind: false };
  // A compaction (another engine's rewrite): the same rows in other files, Delta's OPTIMIZE.
  if (snapshot.summary.operation === 'replace') return { operation: 'OPTIMIZE', operationParameters: {}, blind: false };
  // Snapshots written before the operation was recorded: Iceberg's operation is all there is.
  if (snapshot.summary.operation === 'delete') return { operation: 'DELETE', operationParameters: {}, blind: false };
  const overwrite = snapshot.summary.operation === 'overwrite';
  return { operation: 'WRITE', operationParameters: { mode: overwrite ? 'Overwrite' : 'Append', partitionBy }, blind: !overwrite };
}

export function deletionVectorsOn(snapshot: Snapshot | undefined): boolean {
  return snapshot?.summary[DELTA_DV_KEY] === 'true';
}

export function deltaVersionOf(snapshot: Snapshot): number | undefined {
  const raw = snapshot.summary[DELTA_VERSION_KEY];
  return raw === undefined ? undefined : Number(raw);
}

/** The Delta version the next snapshot on top of `parent` mirrors. */
export function nextDeltaVersion(parent: Snapshot | undefined): number {
  if (!parent) return 1;
  const v = deltaVersionOf(parent);
  return v === undefined ? 1 : v + 1;
}

/** Delta `metaData` for an Iceberg schema. The Delta table id is the Iceberg table UUID. */
export function deltaMetadata(metadata: TableMetadata, schema: Schema, createdTime: number, deletionVectors = false): Metadata {
  const physicalNames = readPhysicalNames(metadata);
  return {
    id: metadata['table-uuid'],
    format: { provider: 'parquet', options: {} },
    schemaString: JSON.stringify(toDeltaSchema(schema, physicalNames)),
    partitionColumns: identityColumns(metadata, schema).map((c) => c.name),
    configuration: {
      'delta.columnMapping.mode': 'name',
      'delta.columnMapping.maxColumnId': String(metadata['last-column-id']),
      'delta.checkpointInterval': String(checkpointInterval(metadata)),
      ...(deletionVectors ? { 'delta.enableDeletionVectors': 'true' } : {}),
    },
    createdTime,
  };
}

export function checkpointInterval(metadata: TableMetadata): number {
  return intProp(metadata.properties, Props.deltaCheckpointInterval, 10);
}

/**
 * Delta partition columns: the identity-partitioned source columns of the default spec
 * (DESIGN.md §4); other transforms are served by per-file stats.
 */
export function identityColumns(metadata: TableMetadata, schema: Schema): { name: string; fieldId: number; partitionField: string; type: string }[] {
  const spec = specById(metadata, metadata['default-spec-id']);
  const out: { name: string; fieldId: number; partitionField: string; type: string }[] = [];
  for (const f of spec.fields) {
    if (f.transform !== 'identity') continue;
    const source = schema.fields.find((c) => c.id === f['source-id']);
    if (source && typeof source.type === 'string') out.push({ name: source.name, fieldId: source.id, partitionField: f.name, type: source.type });
  }
  return out;
}

/** `partitionValues` of a table's data files, keyed by the columns' physical names (column mapping). */
function partitionValuesOf(metadata: TableMetadata, schema: Schema, physicalNames: Map<number, string>): (file: DataFile) => Record<string, string | null> {
  const columns = identityColumns(metadata, schema);
  return (file) => {
    const out: Record<string, string | null> = {};
    for (const c of columns) {
      const value = (file.partition[c.partitionField] ?? null) as LiteralValue;
      out[physicalNames.get(c.fieldId) ?? c.name] = serializePartitionValue(value, c.type, c.name);
    }
    return out;
  };
}


export function initialSchema(metadata: TableMetadata): Schema {
  return metadata.schemas.reduce((a, b) => (a['schema-id'] <= b['schema-id'] ? a : b));
}

/** Version 0: the table as created (protocol + metaData, no files). */
export function creationActions(metadata: TableMetadata, timestampMs: number): Action[] {
  const schema = initialSchema(metadata);
  const commitInfo: CommitInfo = {
    timestamp: timestampMs,
    operation: 'CREATE TABLE',
    operationParameters: { partitionBy: JSON.stringify(identityColumns(metadata, schema).map((c) => c.name)) },
    engineInfo: ENGINE_INFO,
  };
  return [
    { commitInfo },
    { protocol: protocolFor(schema, { columnMapping: true }) },
    { metaData: deltaMetadata(metadata, schema, timestampMs) },
  ];
}

/** What one snapshot changed, as the Delta version mirroring it needs to know it. */
export interface SnapshotFiles {
  added: DataFile[];
  removed: DataFile[];
  /** Delete files the snapshot added and removed. */
  addedDeletes: DataFile[];
  removedDeletes: DataFile[];
  /** Live data files whose deletes changed without the file itself being added or removed. */
  deleteTargets: Map<string, DataFile>;
  /** The Delta DV descriptor of each delete file above (by `deleteFileKey`). */
  descriptors: Map<string, DeletionVectorDescriptor>;
}

/** The actions of the Delta version that mirrors `snapshot`. */
export function snapshotActions(metadata: TableMetadata, snapshot: Snapshot, files: SnapshotFiles): Action[] {
  const ts = snapshot['timestamp-ms'];
  const schema = schemaById(metadata, snapshot['schema-id'] ?? metadata['current-schema-id']);
  const parent = snapshot['parent-snapshot-id'] !== undefined ? snapshotById(metadata, snapshot['parent-snapshot-id']) : undefined;
  const previousSchema = parent
    ? schemaById(metadata, parent['schema-id'] ?? schema['schema-id'])
    : initialSchema(metadata);
  const physicalNames = readPhysicalNames(metadata);
  const partitionValues = partitionValuesOf(metadata, schema, physicalNames);
  const dvBefore = deletionVectorsOn(parent);
  const dvAfter = deletionVectorsOn(snapshot);

  const op = deltaOperation(snapshot, JSON.stringify(identityColumns(metadata, schema).map((c) => c.name)));
  const commitInfo: CommitInfo = {
    timestamp: ts,
    operation: op.operation,
    operationParameters: op.operationParameters,
    isBlindAppend: op.blind && files.removed.length === 0 && files.addedDeletes.length === 0,
    engineInfo: ENGINE_INFO,
    icebergSnapshotId: snapshot['snapshot-id'],
    icebergSequenceNumber: snapshot['sequence-number'],
  };
  const actions: Action[] = [{ commitInfo }];
  // An alter snapshot carries new table properties, some of which Delta's metaData mirrors.
  if (previousSchema['schema-id'] !== schema['schema-id'] || dvBefore !== dvAfter || snapshot.summary[OPERATION_KEY] === 'alter') {
    const before: Protocol = protocolFor(previousSchema, { columnMapping: true, deletionVectors: dvBefore });
    const after: Protocol = protocolFor(schema, { columnMapping: true, deletionVectors: dvAfter });
    if (JSON.stringify(before) !== JSON.stringify(after)) actions.push({ protocol: after });
    actions.push({ metaData: deltaMetadata(metadata, schema, ts, dvAfter) });
  }
  actions.push({ txn: { appId: `iceberg:${metadata['table-uuid']}`, version: snapshot['sequence-number'], lastUpdated: ts } });
  // The batch of an idempotent write (write-txn.ts), derived from the snapshot summary.
  const batch = snapshotTxn(snapshot);
  if (batch) actions.push({ txn: batch });

  // Row-level deletes: a data file's DV is part of its logical file in Delta, so a new, changed or
  // dropped DV is the file removed with its old DV and added again with the new one.
  const dvOf = (deletes: DataFile[]) => {
    const out = new Map<string, DeletionVectorDescriptor>();
    for (const d of deletes) {
      const ref = d['referenced-data-file'];
      if (ref === undefined) throw dataInvalid(`delta projection: delete file ${d['file-path']} names no data file`);
      if (out.has(ref)) throw dataInvalid(`delta projection: data file ${ref} has two deletion vectors in snapshot ${snapshot['snapshot-id']}`);
      out.set(ref, files.descriptors.get(deleteFileKey(d))!);
    }
    return out;
  };
  // Iceberg's `replace` changes files, not rows (DESIGN.md §10: compaction is dataChange false).
  const dataChange = snapshot.summary.operation !== 'replace';
  const oldDvs = dvOf(files.removedDeletes);
  const newDvs = dvOf(files.addedDeletes);
  const remove = (f: DataFile, dv: DeletionVectorDescriptor | undefined): RemoveFile => ({
    path: deltaPath(metadata.location, f['file-path']),
    deletionTimestamp: ts,
    dataChange,
    extendedFileMetadata: true,
    partitionValues: partitionValues(f),
    size: f['file-size-in-bytes'],
    ...(dv ? { deletionVector: dv } : {}),
  });
  const add = (f: DataFile, dv: DeletionVectorDescriptor | undefined): AddFile => addFile(metadata.location, f, partitionValues(f), ts, dataChange, schema, physicalNames, dv);
  for (const f of files.removed) actions.push({ remove: remove(f, oldDvs.get(f['file-path'])) });
  for (const [path, f] of files.deleteTargets) {
    actions.push({ remove: remove(f, oldDvs.get(path)) });
    actions.push({ add: add(f, newDvs.get(path)) });
  }
  for (const f of files.added) actions.push({ add: add(f, newDvs.get(f['file-path'])) });
  return actions;
}

/**
 * The Delta version that starts the log of a table that had Iceberg alone (see DELTA_START_KEY):
 * protocol, metaData and every live data file of the snapshot, as Delta's CONVERT writes it, each
 * with the deletion vector of its (Twinlake) delete file: an adopted table's deletes are rewritten
 * as Twinlake's by the snapshot that starts the log (register.ts).
 */
export async function startActions(io: FileIO, metadata: TableMetadata, snapshot: Snapshot): Promise<Action[]> {
  const ts = snapshot['timestamp-ms'];
  const schema = schemaById(metadata, snapshot['schema-id'] ?? metadata['current-schema-id']);
  const adds = [...(await liveAdds(io, metadata, snapshot, ts)).values()];
  // A table adopted with row-level deletes (register) starts with deletion vectors.
  const dvs = adds.some((a) => a.deletionVector !== undefined) || deletionVectorsOn(snapshot);
  const partitionedBy = JSON.stringify(identityColumns(metadata, schema).map((c) => c.name));
  const commitInfo: CommitInfo = {
    timestamp: ts,
    operation: 'CONVERT',
    operationParameters: { numFiles: String(adds.length), partitionedBy, collectStats: 'true', sourceFormat: 'iceberg' },
    engineInfo: ENGINE_INFO,
    icebergSnapshotId: snapshot['snapshot-id'],
    icebergSequenceNumber: snapshot['sequence-number'],
  };
  const actions: Action[] = [
    { commitInfo },
    { protocol: protocolFor(schema, { columnMapping: true, deletionVectors: dvs }) },
    { metaData: deltaMetadata(metadata, schema, ts, dvs) },
    { txn: { appId: `iceberg:${metadata['table-uuid']}`, version: snapshot['sequence-number'], lastUpdated: ts } },
  ];
  for (const add of adds) actions.push({ add });
  return actions;
}

/**
 * The files a snapshot added and removed, read from the manifests it wrote; for row-level deletes
 * also the data files they apply to and their Delta DV descriptors.
 */
export async function snapshotChanges(io: FileIO, metadata: TableMetadata, snapshot: Snapshot): Promise<SnapshotFiles> {
  const out: SnapshotFiles = { added: [], removed: [], addedDeletes: [], removedDeletes: [], deleteTargets: new Map(), descriptors: new Map() };
  const id = snapshot['snapshot-id'];
  const manifests = await readManifestList(io, snapshot['manifest-list']);
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
  if (deletes.length === 0) return out;
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
  for (const d of deletes) out.descriptors.set(deleteFileKey(d), await deltaDescriptor(io, metadata.location, d));
  return out;
}

export interface CatchUpResult {
  /** The Delta version that mirrors the target snapshot (or 0 for a table without snapshots). */
  version: number;
  /** Versions this call wrote (others may have been written concurrently by another writer). */
  written: number[];
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

  /** Writes `version`; false when another writer took it for a different snapshot. */
  const write = async (version: number, actions: Action[], snapshotId?: bigint): Promise<boolean> => {
    if (await io.writeIfAbsent(logFile(version), serializeCommit(actions))) {
      written.push(version);
      await opts.afterWrite?.(version);
      return true;
    }
    const text = await io.readText(logFile(version));
    const mirrored = text.trim() === '' ? undefined : findCommitInfo(parseCommit(text, commitPath(version)))?.icebergSnapshotId;
    return snapshotId === undefined ? mirrored === undefined && text.trim() !== '' : mirrored !== undefined && BigInt(mirrored as bigint) === snapshotId;
  };

  for (let attempt = 0; attempt < 5; attempt++) {
    const head = await readDeltaHead(store, key, target && deltaVersionOf(target));
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
      lost = !(await write(0, await startActions(io, metadata, plan.start), plan.start['snapshot-id']));
      next = 1;
    } else if (plan.creation) {
      const created = plan.kind === 'replay' && plan.snapshots.length ? plan.snapshots[0]!['timestamp-ms'] : metadata['last-updated-ms'];
      lost = !(await write(0, creationActions(metadata, created)));
      next = 1;
    }
    if (!lost && plan.kind === 'replay') {
      for (const s of plan.snapshots) {
        if (!(await write(next, snapshotActions(metadata, s, await snapshotChanges(io, metadata, s)), s['snapshot-id']))) {
          lost = true;
          break;
        }
        next++;
      }
    } else if (!lost && plan.kind === 'jump') {
      const before = head && (await readDeltaSnapshot(store, key));
      lost = !(await write(next, await jumpActions(io, metadata, target!, before, head), target!['snapshot-id']));
      next++;
    }
    if (!lost) return { version: next - 1, written };
  }
  throw new TwinlakeError('commit-conflict', `delta projection: the log of ${location} kept moving while catching up with iceberg snapshot ${target?.['snapshot-id']}`);
}

/**
 * One Delta version that takes the log from its current live files (`before`) to the live files
 * of `target`: what differs is removed and added again (a file whose deletion vector changed is
 * both), protocol and metaData follow the target's schema. A rollback to an older snapshot is
 * Delta's RESTORE; any other jump (parents expired, another lineage) an overwrite.
 */
async function jumpActions(io: FileIO, metadata: TableMetadata, target: Snapshot, before: DeltaSnapshot | undefined, head: DeltaHead | undefined): Promise<Action[]> {
  // Delta commit times only grow (time travel by timestamp relies on it); the jump happened when
  // the Iceberg table last changed, no earlier than the newest Delta commit.
  const ts = Math.max(metadata['last-updated-ms'], head?.timestampMs ?? 0, target['timestamp-ms']);
  const schema = schemaById(metadata, target['schema-id'] ?? metadata['current-schema-id']);
  const wanted = await liveAdds(io, metadata, target, ts);
  const dvNeeded = [...wanted.values()].some((a) => a.deletionVector !== undefined);
  // Table features are never dropped: a log that has deletion vectors keeps the feature.
  const dvBefore = before?.protocol.writerFeatures?.includes('deletionVectors') ?? false;
  const protocol = protocolFor(schema, { columnMapping: true, deletionVectors: dvBefore || dvNeeded || deletionVectorsOn(target) });
  const meta = deltaMetadata(metadata, schema, before?.metadata.createdTime ?? ts, dvBefore || dvNeeded || deletionVectorsOn(target));

  const back = head?.icebergSequenceNumber !== undefined && target['sequence-number'] < head.icebergSequenceNumber;
  const commitInfo: CommitInfo = {
    timestamp: ts,
    operation: back ? 'RESTORE' : 'WRITE',
    operationParameters: back ? { icebergSnapshotId: String(target['snapshot-id']) } : { mode: 'Overwrite', partitionBy: JSON.stringify(meta.partitionColumns) },
    isBlindAppend: false,
    engineInfo: ENGINE_INFO,
    icebergSnapshotId: target['snapshot-id'],
    icebergSequenceNumber: target['sequence-number'],
  };
  const actions: Action[] = [{ commitInfo }];
  if (!before || JSON.stringify(before.protocol) !== JSON.stringify(protocol)) actions.push({ protocol });
  const same = (a: Metadata, b: Metadata) =>
    a.schemaString === b.schemaString && JSON.stringify(a.partitionColumns) === JSON.stringify(b.partitionColumns) && JSON.stringify(a.configuration) === JSON.stringify(b.configuration);
  if (!before || !same(before.metadata, meta)) actions.push({ metaData: meta });
  // The sequence number only grows, so the txn version does too, even when the target is older.
  actions.push({ txn: { appId: `iceberg:${metadata['table-uuid']}`, version: metadata['last-sequence-number'], lastUpdated: ts } });
  for (const a of before?.files ?? []) {
    const k = fileKey(a.path, dvId(a.deletionVector));
    if (wanted.has(k)) {
      wanted.delete(k);
      continue;
    }
    const remove: RemoveFile = {
      path: a.path,
      deletionTimestamp: ts,
      dataChange: true,
      extendedFileMetadata: true,
      partitionValues: a.partitionValues,
      size: a.size,
      ...(a.deletionVector ? { deletionVector: a.deletionVector } : {}),
    };
    actions.push({ remove });
  }
  for (const add of wanted.values()) actions.push({ add });
  return actions;
}

/**
 * The Delta `add` of every live data file of `snapshot`, each with the deletion vector of its
 * delete file (keyed by Delta's logical file key). What Delta cannot hold is refused: equality
 * deletes, and more than one delete file for a data file.
 */
async function liveAdds(io: FileIO, metadata: TableMetadata, snapshot: Snapshot, ts: number): Promise<Map<string, AddFile>> {
  const schema = schemaById(metadata, snapshot['schema-id'] ?? metadata['current-schema-id']);
  const physicalNames = readPhysicalNames(metadata);
  const partitionValues = partitionValuesOf(metadata, schema, physicalNames);
  const { data, deletes, sequenceNumbers } = await liveFiles(io, metadata, snapshot);
  const applicable = applicableDeletes(metadata, data, deletes, sequenceNumbers);
  const wanted = new Map<string, AddFile>();
  for (const f of data) {
    const found = applicable(f);
    if ((found?.equality.length ?? 0) > 0) throw unsupported(`delta projection: ${f['file-path']} has equality deletes, which Delta cannot hold`);
    const positions = [...(found?.dv ? [found.dv] : []), ...(found?.positionFiles ?? [])];
    if (positions.length > 1) throw unsupported(`delta projection: ${f['file-path']} has ${positions.length} delete files; Delta holds one deletion vector per file`);
    const dv = positions[0] ? await deltaDescriptor(io, metadata.location, positions[0]) : undefined;
    const add = addFile(metadata.location, f, partitionValues(f), ts, true, schema, physicalNames, dv);
    wanted.set(fileKey(add.path, dvId(dv)), add);
  }
  return wanted;
}

/** The Delta `add` of an Iceberg data file (and the deletion vector applied to it, if any). */
function addFile(
  location: string,
  f: DataFile,
  partitionValues: Record<string, string | null>,
  ts: number,
  dataChange: boolean,
  schema: Schema,
  physicalNames: Map<number, string>,
  dv: DeletionVectorDescriptor | undefined,
): AddFile {
  return {
    path: deltaPath(location, f['file-path']),
    partitionValues,
    size: f['file-size-in-bytes'],
    modificationTime: ts,
    dataChange,
    // A file's stats describe all its rows; once some are deleted they bound the rest only
    // loosely (PROTOCOL.md §Per-file Statistics: tightBounds).
    stats: deltaStats(f, schema, physicalNames, dv ? { tightBounds: false } : {}),
    ...(dv ? { deletionVector: dv } : {}),
  };
}

/** A deletion vector's identity in a logical file key (PROTOCOL.md §Deletion Vectors: storage type, path or inline data, offset). */
function dvId(dv: DeletionVectorDescriptor | undefined): string | undefined {
  return dv ? `${dv.storageType}${dv.pathOrInlineDv}${dv.offset !== undefined ? `@${dv.offset}` : ''}` : undefined;
}
