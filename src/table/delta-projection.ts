import { dataInvalid } from '../core/errors.ts';
import { stringifyJson } from '../core/json.ts';
import type { FileIO } from '../io/file-io.ts';
import type { Action, AddFile, CommitInfo, DeletionVectorDescriptor, Metadata, Protocol, RemoveFile } from '../spec/delta/actions.ts';
import { commitPath, parseCommit, serializeCommit } from '../spec/delta/actions.ts';
import { protocolFor, toDeltaSchema } from '../spec/delta/schema.ts';
import { deltaStats } from '../spec/parquet/stats.ts';
import { schemaById, snapshotById, specById } from '../spec/iceberg/table-metadata.ts';
import { serializePartitionValue } from '../spec/delta/partition-values.ts';
import type { LiteralValue } from '../spec/scan-task.ts';
import type { DataFile, ManifestEntry, ManifestFile, Schema, Snapshot, TableMetadata } from '../spec/iceberg/types.ts';
import { readManifestEntries, readManifestList } from './manifest-io.ts';
import { deltaPath, findCommitInfo } from '../spec/delta/replay.ts';
import { deleteFileKey } from '../spec/iceberg/manifest.ts';
import { deltaDescriptor } from './row-deletes.ts';
import { intProp, Props, readPhysicalNames } from './table-properties.ts';
import { ENGINE_INFO } from './version.ts';
import { snapshotTxn } from './write-txn.ts';

/**
 * The Delta log as a deterministic projection of the Iceberg snapshot lineage (DESIGN.md §1).
 * Delta version 0 mirrors the table's creation; every later version mirrors one Iceberg snapshot,
 * whose summary names it (`delta-version`) and which it names back (`icebergSnapshotId`).
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
  const oldDvs = dvOf(files.removedDeletes);
  const newDvs = dvOf(files.addedDeletes);
  const remove = (f: DataFile, dv: DeletionVectorDescriptor | undefined): RemoveFile => ({
    path: deltaPath(metadata.location, f['file-path']),
    deletionTimestamp: ts,
    dataChange: true,
    extendedFileMetadata: true,
    partitionValues: partitionValues(f),
    size: f['file-size-in-bytes'],
    ...(dv ? { deletionVector: dv } : {}),
  });
  const add = (f: DataFile, dv: DeletionVectorDescriptor | undefined): AddFile => ({
    path: deltaPath(metadata.location, f['file-path']),
    partitionValues: partitionValues(f),
    size: f['file-size-in-bytes'],
    modificationTime: ts,
    dataChange: true,
    // A file's stats describe all its rows; once some are deleted they bound the rest only
    // loosely (PROTOCOL.md §Per-file Statistics: tightBounds).
    stats: deltaStats(f, schema, physicalNames, dv ? { tightBounds: false } : {}),
    ...(dv ? { deletionVector: dv } : {}),
  });
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
 * protocol, metaData and every live data file of the snapshot, as Delta's CONVERT writes it.
 * Adding Delta is refused for tables with row-level deletes, so no file has a deletion vector.
 */
async function startActions(io: FileIO, metadata: TableMetadata, snapshot: Snapshot): Promise<Action[]> {
  const ts = snapshot['timestamp-ms'];
  const schema = schemaById(metadata, snapshot['schema-id'] ?? metadata['current-schema-id']);
  const physicalNames = readPhysicalNames(metadata);
  const partitionValues = partitionValuesOf(metadata, schema, physicalNames);
  const live: DataFile[] = [];
  for (const m of await readManifestList(io, snapshot['manifest-list'])) {
    for (const e of await readManifestEntries(io, m, metadata)) {
      if (e.status === 2) continue;
      if (m.content !== 0) throw dataInvalid(`delta projection: snapshot ${snapshot['snapshot-id']} starts the Delta log but has delete file ${e['data-file']['file-path']}`);
      live.push(e['data-file']);
    }
  }
  const partitionedBy = JSON.stringify(identityColumns(metadata, schema).map((c) => c.name));
  const commitInfo: CommitInfo = {
    timestamp: ts,
    operation: 'CONVERT',
    operationParameters: { numFiles: String(live.length), partitionedBy, collectStats: 'true', sourceFormat: 'iceberg' },
    engineInfo: ENGINE_INFO,
    icebergSnapshotId: snapshot['snapshot-id'],
    icebergSequenceNumber: snapshot['sequence-number'],
  };
  const actions: Action[] = [
    { commitInfo },
    { protocol: protocolFor(schema, { columnMapping: true }) },
    { metaData: deltaMetadata(metadata, schema, ts) },
    { txn: { appId: `iceberg:${metadata['table-uuid']}`, version: snapshot['sequence-number'], lastUpdated: ts } },
  ];
  for (const f of live) {
    const add: AddFile = {
      path: deltaPath(metadata.location, f['file-path']),
      partitionValues: partitionValues(f),
      size: f['file-size-in-bytes'],
      modificationTime: ts,
      dataChange: true,
      stats: deltaStats(f, schema, physicalNames),
    };
    actions.push({ add });
  }
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
 * Writes the Delta versions that are missing for the lineage of `target` (the current snapshot by
 * default), oldest first, each create-only. A version already taken must mirror the same snapshot;
 * anything else means the log diverged from Iceberg and is an error.
 */
export async function catchUpDelta(
  io: FileIO,
  metadata: TableMetadata,
  opts: { target?: Snapshot; afterWrite?: (version: number) => Promise<void> } = {},
): Promise<CatchUpResult> {
  const location = metadata.location;
  const logFile = (v: number) => `${location}/${commitPath(v)}`;
  const target = opts.target ?? (metadata['current-snapshot-id'] != null ? snapshotById(metadata, metadata['current-snapshot-id']) : undefined);

  const missing: Snapshot[] = [];
  let needCreation = true;
  for (let s = target; s; ) {
    const v = deltaVersionOf(s);
    if (v === undefined) throw dataInvalid(`delta projection: snapshot ${s['snapshot-id']} has no ${DELTA_VERSION_KEY} in its summary`);
    if (await io.exists(logFile(v))) {
      needCreation = false;
      break;
    }
    missing.push(s);
    if (s.summary[DELTA_START_KEY] === 'true') {
      needCreation = false;
      break;
    }
    const parentId = s['parent-snapshot-id'];
    s = parentId !== undefined ? snapshotById(metadata, parentId) : undefined;
  }
  if (needCreation && (await io.exists(logFile(0)))) needCreation = false;

  const written: number[] = [];
  const write = async (version: number, actions: Action[], snapshotId?: bigint) => {
    const ok = await io.writeIfAbsent(logFile(version), serializeCommit(actions));
    if (ok) {
      written.push(version);
      await opts.afterWrite?.(version);
      return;
    }
    const existing = parseCommit(await io.readText(logFile(version)), commitPath(version));
    const info = findCommitInfo(existing);
    const mirrored = info?.icebergSnapshotId;
    const same = snapshotId === undefined ? mirrored === undefined : mirrored !== undefined && BigInt(mirrored as bigint) === snapshotId;
    if (!same) {
      throw dataInvalid(
        `delta projection: ${commitPath(version)} mirrors iceberg snapshot ${stringifyJson(mirrored ?? null)}, expected ${snapshotId ?? 'table creation'}`,
      );
    }
  };

  if (needCreation) {
    const created = missing.length ? missing[missing.length - 1]!['timestamp-ms'] : metadata['last-updated-ms'];
    await write(0, creationActions(metadata, created));
  }
  for (const s of missing.reverse()) {
    const actions = s.summary[DELTA_START_KEY] === 'true' ? await startActions(io, metadata, s) : snapshotActions(metadata, s, await snapshotChanges(io, metadata, s));
    await write(deltaVersionOf(s)!, actions, s['snapshot-id']);
  }
  return { version: target ? deltaVersionOf(target)! : 0, written };
}
