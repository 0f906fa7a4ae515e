import { dataInvalid, unsupported } from '../../core/errors.ts';
import { addLine, addLineTail, CommitWriter, type Action, type AddFile, type CommitInfo, type DeletionVectorDescriptor, type Metadata, type Protocol, type RemoveFile } from '../delta/actions.ts';
import { deltaPath, fileKey } from '../delta/replay.ts';
import { protocolFor } from '../delta/schema.ts';
import { applicableDeletes } from '../iceberg/scan.ts';
import { schemaById, snapshotById } from '../iceberg/table-metadata.ts';
import type { DataFile, Schema, Snapshot, TableMetadata } from '../iceberg/types.ts';
import { deltaStats, deltaStatsEncoder } from '../parquet/stats.ts';
import { deltaMetadata, identityColumns, initialSchema, partitionValuesOf } from './delta-metadata.ts';
import { deletionVectorsOn, OPERATION_KEY, OPERATION_PARAMETERS_KEY } from './summary-keys.ts';
import { readPhysicalNames } from './table-properties.ts';
import { ENGINE_INFO } from './version.ts';
import { snapshotTxn } from './write-txn.ts';

/**
 * The Delta log as a deterministic projection of the Iceberg snapshot lineage (DESIGN.md §1).
 * Delta version 0 mirrors the table's creation (or the snapshot that added Delta); every later
 * version mirrors one Iceberg snapshot, which it names (`commitInfo.icebergSnapshotId`): that is
 * the mapping. Everything here is a function of its input: times come from the snapshot and the
 * metadata, never a clock, so a lost Delta commit is derived again byte for byte. Reading the
 * manifests and the log is the caller's part (src/table/delta/delta-projection.ts).
 */

/** A delete file and the Delta deletion vector descriptor of the rows it deletes. */
export interface DeleteFileDv {
  file: DataFile;
  deletionVector: DeletionVectorDescriptor;
}

/** A live data file and the Delta deletion vector of the deletes applied to it, if any. */
export interface LiveDataFile {
  file: DataFile;
  deletionVector?: DeletionVectorDescriptor;
}

/** What one snapshot changed, as read from the manifests it wrote (ADDED and DELETED entries). */
export interface SnapshotChanges {
  added: DataFile[];
  removed: DataFile[];
  /** Delete files the snapshot added and removed, each naming its data file (`referenced-data-file`). */
  addedDeletes: DeleteFileDv[];
  removedDeletes: DeleteFileDv[];
  /** Live data files whose deletes changed without the file itself being added or removed. */
  deleteTargets: DataFile[];
}

/**
 * The Delta state a version follows, as far as the projection needs it: the protocol in force
 * (its `deletionVectors` feature is kept: table features are never dropped) and the Iceberg
 * schema whose Delta twin the metaData holds (a new one is written when it changes).
 */
export interface DeltaFollowed {
  /** The version followed; the projected one is `version + 1`. */
  version: number;
  protocol: Protocol;
  schemaId: number;
}

/** A Delta version: its number and its actions, in the order they are written. */
export interface DeltaVersion {
  version: number;
  actions: Action[];
}

/**
 * The input of `projectSnapshot`: a snapshot that follows a Delta version (what it changed), or
 * the snapshot that starts the log (`follows: null`, DELTA_START_KEY): its whole live state.
 */
export type SnapshotInput =
  | { metadata: TableMetadata; snapshot: Snapshot; follows: DeltaFollowed; changes: SnapshotChanges }
  | { metadata: TableMetadata; snapshot: Snapshot; follows: null; live: LiveDataFile[] };

/** The Delta state the lineage says a version mirroring `snapshot` follows: its parent's. */
export function followedInLineage(metadata: TableMetadata, snapshot: Snapshot, version: number): DeltaFollowed {
  const schema = snapshotSchema(metadata, snapshot);
  const parent = snapshot['parent-snapshot-id'] !== undefined ? snapshotById(metadata, snapshot['parent-snapshot-id']) : undefined;
  const previous = parent ? schemaById(metadata, parent['schema-id'] ?? schema['schema-id']) : initialSchema(metadata);
  return { version, schemaId: previous['schema-id'], protocol: protocolFor(previous, { columnMapping: true, deletionVectors: deletionVectorsOn(parent) }) };
}

/** Version 0 of a table created with Delta: protocol and metaData, no files. */
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

/** The Delta version that mirrors one Iceberg snapshot. */
export function projectSnapshot(input: SnapshotInput): DeltaVersion {
  if (input.follows === null) return { version: 0, actions: startActions(input.metadata, input.snapshot, input.live) };
  const { actions, added } = changeActions(input.metadata, input.snapshot, input.follows, input.changes);
  for (const f of input.changes.added) actions.push({ add: added.add(f) });
  return { version: input.follows.version + 1, actions };
}

/** A Delta version as the bytes of its commit file, and its commitInfo. */
export interface EncodedDeltaVersion {
  version: number;
  commitInfo?: CommitInfo;
  bytes: Uint8Array;
}

/**
 * `projectSnapshot` as the bytes `encodeCommit` writes for its actions, made without them: the
 * `add` of each file the snapshot added goes from the data file straight to its line (a large
 * add-files commit has 100,000 of them; building, holding and then serializing an action object
 * per file was most of its Delta version's time).
 */
export function encodeSnapshotVersion(input: SnapshotInput): EncodedDeltaVersion {
  const w = new CommitWriter();
  if (input.follows === null) {
    const { version, actions } = projectSnapshot(input);
    for (const a of actions) w.action(a);
    return { version, commitInfo: (actions[0] as { commitInfo: CommitInfo }).commitInfo, bytes: w.bytes() };
  }
  const { actions, added } = changeActions(input.metadata, input.snapshot, input.follows, input.changes);
  for (const a of actions) w.action(a);
  const files = input.changes.added;
  for (let i = 0; i < files.length; i++) {
    const line = added.line(files[i]!);
    if (line === undefined) w.action({ add: added.add(files[i]!) });
    else if (i > 0) w.line(line);
    else {
      // The other adds' lines are about as long as the first: room for all of them at once.
      const before = w.size;
      w.line(line);
      w.reserve(Math.ceil((w.size - before) * (files.length - 1) * 1.1));
    }
  }
  return { version: input.follows.version + 1, commitInfo: (actions[0] as { commitInfo: CommitInfo }).commitInfo, bytes: w.bytes() };
}

/**
 * The adds of the files a snapshot added, with the deletion vector the snapshot gave each: as
 * action objects, or straight as their lines (the same text: see `addFileLine`) for a file
 * without one (undefined for a file with one).
 */
interface AddedFiles {
  add(f: DataFile): AddFile;
  line(f: DataFile): string | undefined;
}

/** The actions of a version mirroring a change, all but the adds of `files.added` (see AddedFiles), which come last. */
function changeActions(metadata: TableMetadata, snapshot: Snapshot, follows: DeltaFollowed, files: SnapshotChanges): { actions: Action[]; added: AddedFiles } {
  const ts = snapshot['timestamp-ms'];
  const schema = snapshotSchema(metadata, snapshot);
  const physicalNames = readPhysicalNames(metadata);
  const partitionValues = partitionValuesOf(metadata, schema, physicalNames);
  const dvBefore = follows.protocol.writerFeatures?.includes('deletionVectors') ?? false;
  // Table features are never dropped (PROTOCOL.md §Table Features): once on, deletion vectors
  // stay on, also for a snapshot of another engine that does not carry the summary flag.
  const dvAfter = dvBefore || deletionVectorsOn(snapshot);

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
  if (follows.schemaId !== schema['schema-id'] || dvBefore !== dvAfter || snapshot.summary[OPERATION_KEY] === 'alter') {
    const after: Protocol = protocolFor(schema, { columnMapping: true, deletionVectors: dvAfter });
    if (JSON.stringify(follows.protocol) !== JSON.stringify(after)) actions.push({ protocol: after });
    actions.push({ metaData: deltaMetadata(metadata, schema, ts, dvAfter) });
  }
  actions.push({ txn: { appId: `iceberg:${metadata['table-uuid']}`, version: snapshot['sequence-number'], lastUpdated: ts } });
  // The batch of an idempotent write (write-txn.ts), derived from the snapshot summary.
  const batch = snapshotTxn(snapshot);
  if (batch) actions.push({ txn: batch });

  // Row-level deletes: a data file's DV is part of its logical file in Delta (PROTOCOL.md §Add
  // File and Remove File: a logical file is path + deletion vector), so a new, changed or dropped
  // DV is the file removed with its old DV and added again with the new one.
  const dvOf = (deletes: DeleteFileDv[]) => {
    const out = new Map<string, DeletionVectorDescriptor>();
    for (const { file: d, deletionVector } of deletes) {
      const ref = d['referenced-data-file'];
      if (ref === undefined) throw dataInvalid(`delta projection: delete file ${d['file-path']} names no data file`);
      if (out.has(ref)) throw dataInvalid(`delta projection: data file ${ref} has two deletion vectors in snapshot ${snapshot['snapshot-id']}`);
      out.set(ref, deletionVector);
    }
    return out;
  };
  // Iceberg's `replace` changes files, not rows (DESIGN.md §10: compaction is dataChange false;
  // PROTOCOL.md §Add File and Remove File: "only rearranges existing data").
  const dataChange = snapshot.summary.operation !== 'replace';
  const oldDvs = dvOf(files.removedDeletes);
  const newDvs = dvOf(files.addedDeletes);
  const remove = (f: DataFile, dv: DeletionVectorDescriptor | undefined) => removeFile(metadata.location, f, partitionValues(f), ts, dataChange, dv);
  const add = (f: DataFile, dv: DeletionVectorDescriptor | undefined) => addFile(metadata.location, f, partitionValues(f), ts, dataChange, schema, physicalNames, dv);
  for (const f of files.removed) actions.push({ remove: remove(f, oldDvs.get(f['file-path'])) });
  for (const f of files.deleteTargets) {
    actions.push({ remove: remove(f, oldDvs.get(f['file-path'])) });
    actions.push({ add: add(f, newDvs.get(f['file-path'])) });
  }
  const line = addFileLine(metadata.location, partitionValues, ts, dataChange, schema, physicalNames);
  const added: AddedFiles = {
    add: (f) => add(f, newDvs.get(f['file-path'])),
    line: (f) => (newDvs.size > 0 && newDvs.has(f['file-path']) ? undefined : line(f)),
  };
  return { actions, added };
}

/**
 * The Delta version that starts the log of a table that had Iceberg alone (see DELTA_START_KEY):
 * protocol, metaData and every live data file of the snapshot, as Delta's CONVERT writes it, each
 * with the deletion vector of its (Twinlake) delete file: an adopted table's deletes are rewritten
 * as Twinlake's by the snapshot that starts the log (register.ts).
 */
function startActions(metadata: TableMetadata, snapshot: Snapshot, live: LiveDataFile[]): Action[] {
  const ts = snapshot['timestamp-ms'];
  const schema = snapshotSchema(metadata, snapshot);
  const adds = [...liveAdds(metadata, schema, live, ts).values()];
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

/** The Delta log as a jump finds it. */
export interface DeltaLogState {
  /** The newest version; the jump is `version + 1`. */
  version: number;
  /** Its live logical files. */
  files: AddFile[];
  /** The protocol and metaData in force, when known; unknown ones are written again. */
  protocol?: Protocol;
  metadata?: Metadata;
  /** The newest commit's time and the Iceberg sequence number of the snapshot it mirrors. */
  timestampMs?: number;
  icebergSequenceNumber?: number;
}

export interface JumpInput {
  metadata: TableMetadata;
  target: Snapshot;
  /** The target's live data files, each with its deletion vector (`liveDeleteFiles` finds them). */
  live: LiveDataFile[];
  delta: DeltaLogState;
}

/**
 * One Delta version that takes the log from its live files to the live files of `target`: what
 * differs is removed and added again (a file whose deletion vector changed is both), protocol and
 * metaData follow the target's schema. A rollback to an older snapshot is Delta's RESTORE; any
 * other jump (parents expired, another lineage, an emptied commit) an overwrite.
 */
export function projectJump(input: JumpInput): DeltaVersion {
  const { metadata, target, delta } = input;
  // Delta commit times only grow (time travel by timestamp relies on it); the jump happened when
  // the Iceberg table last changed, no earlier than the newest Delta commit.
  const ts = Math.max(metadata['last-updated-ms'], delta.timestampMs ?? 0, target['timestamp-ms']);
  const schema = snapshotSchema(metadata, target);
  const wanted = liveAdds(metadata, schema, input.live, ts);
  const dvNeeded = [...wanted.values()].some((a) => a.deletionVector !== undefined);
  // Table features are never dropped: a log that has deletion vectors keeps the feature.
  const dvBefore = delta.protocol?.writerFeatures?.includes('deletionVectors') ?? false;
  const dvs = dvBefore || dvNeeded || deletionVectorsOn(target);
  const protocol = protocolFor(schema, { columnMapping: true, deletionVectors: dvs });
  const meta = deltaMetadata(metadata, schema, delta.metadata?.createdTime ?? ts, dvs);

  const back = delta.icebergSequenceNumber !== undefined && target['sequence-number'] < delta.icebergSequenceNumber;
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
  if (!delta.protocol || JSON.stringify(delta.protocol) !== JSON.stringify(protocol)) actions.push({ protocol });
  const same = (a: Metadata, b: Metadata) =>
    a.schemaString === b.schemaString && JSON.stringify(a.partitionColumns) === JSON.stringify(b.partitionColumns) && JSON.stringify(a.configuration) === JSON.stringify(b.configuration);
  if (!delta.metadata || !same(delta.metadata, meta)) actions.push({ metaData: meta });
  // The sequence number only grows, so the txn version does too, even when the target is older.
  actions.push({ txn: { appId: `iceberg:${metadata['table-uuid']}`, version: metadata['last-sequence-number'], lastUpdated: ts } });
  for (const a of delta.files) {
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
  return { version: delta.version + 1, actions };
}

/**
 * The one position delete file (a deletion vector or a position delete file) applied to each
 * live data file, by Iceberg's scope rules. What Delta cannot hold is refused: equality deletes,
 * and more than one delete file for a data file (Delta holds one deletion vector per file).
 */
export function liveDeleteFiles(
  metadata: TableMetadata,
  live: { data: DataFile[]; deletes: DataFile[]; sequenceNumbers: Map<DataFile, number | undefined> },
): { file: DataFile; deleteFile?: DataFile }[] {
  const applicable = applicableDeletes(metadata, live.data, live.deletes, live.sequenceNumbers);
  return live.data.map((f) => {
    const found = applicable(f);
    if ((found?.equality.length ?? 0) > 0) throw unsupported(`delta projection: ${f['file-path']} has equality deletes, which Delta cannot hold`);
    const positions = [...(found?.dv ? [found.dv] : []), ...(found?.positionFiles ?? [])];
    if (positions.length > 1) throw unsupported(`delta projection: ${f['file-path']} has ${positions.length} delete files; Delta holds one deletion vector per file`);
    return positions[0] ? { file: f, deleteFile: positions[0] } : { file: f };
  });
}

/** The Delta `add` of every live data file, keyed by Delta's logical file key (path + DV). */
function liveAdds(metadata: TableMetadata, schema: Schema, live: LiveDataFile[], ts: number): Map<string, AddFile> {
  const physicalNames = readPhysicalNames(metadata);
  const partitionValues = partitionValuesOf(metadata, schema, physicalNames);
  const wanted = new Map<string, AddFile>();
  for (const { file, deletionVector } of live) {
    const add = addFile(metadata.location, file, partitionValues(file), ts, true, schema, physicalNames, deletionVector);
    wanted.set(fileKey(add.path, dvId(deletionVector)), add);
  }
  return wanted;
}

/** Delta's operation name and parameters for the version mirroring `snapshot`. */
export function deltaOperation(snapshot: Snapshot, partitionBy: string): { operation: string; operationParameters: Record<string, unknown>; blind: boolean } {
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

function snapshotSchema(metadata: TableMetadata, snapshot: Snapshot): Schema {
  return schemaById(metadata, snapshot['schema-id'] ?? metadata['current-schema-id']);
}

/** The Delta `add` of an Iceberg data file (and the deletion vector applied to it, if any). */
export function addFile(
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

/**
 * `addFile` without a deletion vector, straight to the line `serializeCommit` writes for it, for
 * the files of one version: what is the same for all (the stats encoder, the time, dataChange) is
 * worked out once.
 */
export function addFileLine(
  location: string,
  partitionValues: (f: DataFile) => Record<string, string | null>,
  ts: number,
  dataChange: boolean,
  schema: Schema,
  physicalNames: Map<number, string>,
): (f: DataFile) => string {
  const stats = deltaStatsEncoder(schema, physicalNames);
  const tail = addLineTail(ts, dataChange);
  return (f) => addLine(deltaPath(location, f['file-path']), JSON.stringify(partitionValues(f)), f['file-size-in-bytes'], tail, stats(f, false));
}

/** The Delta `remove` of an Iceberg data file (with the deletion vector its logical file had). */
export function removeFile(
  location: string,
  f: DataFile,
  partitionValues: Record<string, string | null>,
  ts: number,
  dataChange: boolean,
  dv: DeletionVectorDescriptor | undefined,
): RemoveFile {
  return {
    path: deltaPath(location, f['file-path']),
    deletionTimestamp: ts,
    dataChange,
    extendedFileMetadata: true,
    partitionValues,
    size: f['file-size-in-bytes'],
    ...(dv ? { deletionVector: dv } : {}),
  };
}

/** A deletion vector's identity in a logical file key (PROTOCOL.md §Deletion Vectors: storage type, path or inline data, offset). */
export function dvId(dv: DeletionVectorDescriptor | undefined): string | undefined {
  return dv ? `${dv.storageType}${dv.pathOrInlineDv}${dv.offset !== undefined ? `@${dv.offset}` : ''}` : undefined;
}
