import { dataInvalid, invalidInput, isTwinlakeError, notFound, unsupported } from '../../core/errors.ts';
import { isUri, joinUri, relativeTo } from '../../core/uri.ts';
import type { ObjectStore } from '../../io/object-store.ts';
import { type Action, type DeletionVectorDescriptor, checkpointPath, commitPath, parseCommit, parseLogFileName, serializeCommit } from '../../format/delta/actions.ts';
import {
  type LastCheckpoint,
  CHECKPOINT_VALUE_PARSERS,
  checkpointRowsToActions,
  checkpointSidecars,
  parseLastCheckpoint,
  resolveSidecars,
} from '../../format/delta/checkpoint.ts';
import { readParquetRows } from '../../engine/parquet-rows.ts';
import { deletionVectorLocation, inlineDeletionVector } from '../../format/delta/deletion-vector.ts';
import { parsePartitionValue } from '../../format/delta/partition-values.ts';
import { type DeltaSnapshot, type ReplayCommit, checkReadSupported, decodePath, findCommitInfo, listLogSegment, replay } from '../../format/delta/replay.ts';
import { columnMappingMode, fromDeltaSchema } from '../../format/delta/schema.ts';
import { parseStats } from '../../format/delta/stats.ts';
import type { LiteralValue, PositionDeletes, ScanFile, ScanTask } from '../../format/scan-task.ts';
import type { DeltaHead } from '../../format/dual/catch-up-plan.ts';

/**
 * Reading and writing a Delta log through an ObjectStore. `tableRoot` is the table's key prefix in
 * the store ('' when the store is rooted at the table).
 */

function logPrefix(tableRoot: string): string {
  return tableRoot === '' ? '_delta_log/' : `${tableRoot.replace(/\/+$/, '')}/_delta_log/`;
}

function tableKey(tableRoot: string, rel: string): string {
  return tableRoot === '' ? rel : `${tableRoot.replace(/\/+$/, '')}/${rel}`;
}

interface LogListing {
  /** Base names of the files directly in `_delta_log/`, with their modification times. */
  files: Map<string, number>;
}

/** The files directly in `_delta_log/` by base name, with their modification times. */
export async function deltaLogFiles(store: ObjectStore, tableRoot: string): Promise<Map<string, number>> {
  return (await listLog(store, tableRoot)).files;
}

/**
 * The files of `_delta_log/` a write's check of the log's tail looks at: when `_last_checkpoint`
 * names a checkpoint that is there, that checkpoint, the commits after it and the checkpoints
 * at their versions (each asked for by name, see listingByProbe), and `_last_checkpoint` itself;
 * otherwise every file (deltaLogFiles). A write need not list a log of 10,000 commits.
 */
export async function deltaLogTail(store: ObjectStore, tableRoot: string): Promise<Map<string, number>> {
  const hint = await readLastCheckpoint(store, tableRoot);
  const probed = hint ? await listingByProbe(store, tableRoot, hint) : undefined;
  if (!hint || !probed) return deltaLogFiles(store, tableRoot);
  const prefix = logPrefix(tableRoot);
  const after = [...probed.files.keys()].map((n) => parseLogFileName(n)).filter((f) => f?.kind === 'commit' && f.version > hint.version).map((f) => f!.version);
  // A checkpoint newer than the hint (its `_last_checkpoint` not written yet) is found too.
  const [last, ...checkpoints] = await Promise.all([store.head(`${prefix}_last_checkpoint`), ...after.map((v) => store.head(prefix + checkpointPath(v).slice('_delta_log/'.length)))]);
  for (const [i, h] of checkpoints.entries()) if (h) probed.files.set(checkpointPath(after[i]!).slice('_delta_log/'.length), h.modified);
  if (last) probed.files.set('_last_checkpoint', last.modified);
  return probed.files;
}

async function listLog(store: ObjectStore, tableRoot: string, namePrefix = ''): Promise<LogListing> {
  const prefix = logPrefix(tableRoot);
  const files = new Map<string, number>();
  for await (const o of store.list(prefix + namePrefix)) {
    const name = o.path.slice(prefix.length);
    if (name !== '' && !name.includes('/')) files.set(name, o.modified);
  }
  return { files };
}

/** Log files come in blocks of this many versions that share a name prefix (17 of 20 digits). */
const BLOCK = 1000;

/**
 * The log files of versions from `version` on: the blocks of 1,000 versions from the one holding
 * `version`, until a block holds no commit (versions are contiguous, so none follows). What a
 * read of the newest version needs once `_last_checkpoint` names its checkpoint: a log of 10,000
 * versions is not listed whole (every listed file is a stat on local disk, a page on S3).
 */
async function listLogFrom(store: ObjectStore, tableRoot: string, version: number): Promise<LogListing> {
  const files = new Map<string, number>();
  for (let block = Math.floor(version / BLOCK); ; block++) {
    const { files: found } = await listLog(store, tableRoot, String(block * BLOCK).padStart(20, '0').slice(0, 17));
    for (const [name, modified] of found) files.set(name, modified);
    if (![...found.keys()].some((name) => parseLogFileName(name)?.kind === 'commit')) return { files };
  }
}

async function readLastCheckpoint(store: ObjectStore, tableRoot: string): Promise<LastCheckpoint | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await store.get(`${logPrefix(tableRoot)}_last_checkpoint`);
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) return undefined;
    throw e;
  }
  // The file is only a hint (PROTOCOL.md §Last Checkpoint File): a torn or corrupt one is ignored
  // and the listing decides.
  try {
    const parsed = parseLastCheckpoint(new TextDecoder().decode(bytes));
    return parsed.checksumValid ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The actions of commit `version`. A commit holds at least its commitInfo (every writer writes
 * one): an empty file is a commit lost to a crash or a bad copy, and reading it as "no change"
 * would drop that version's rows silently.
 */
export async function readCommit(store: ObjectStore, tableRoot: string, version: number): Promise<Action[]> {
  const rel = commitPath(version);
  const bytes = await store.get(tableKey(tableRoot, rel));
  const text = new TextDecoder().decode(bytes);
  if (text.trim() === '') throw dataInvalid(`delta log: ${rel} is empty (${bytes.length} bytes); expected the actions of version ${version}`, { source: rel });
  return parseCommit(text, rel);
}

/**
 * The table at `version` (default: the newest), or at the newest version committed at or before
 * `timestampMs`. Uses `_last_checkpoint` as a hint, the newest complete checkpoint at or before the
 * version, and the commits after it.
 */

/** The actions of a Parquet checkpoint file (see `checkpointRowsToActions`). */
export async function decodeCheckpointParquet(bytes: Uint8Array, source = 'checkpoint'): Promise<Action[]> {
  let rows: Record<string, unknown>[];
  try {
    rows = await readParquetRows(bytes, CHECKPOINT_VALUE_PARSERS);
  } catch (e) {
    throw dataInvalid(`delta checkpoint ${source}: expected a Parquet file, found unreadable bytes (${(e as Error).message})`);
  }
  return checkpointRowsToActions(rows, source);
}

/** A checkpoint file by name: V2 checkpoints may be NDJSON, everything else is Parquet. */
export async function decodeCheckpoint(name: string, bytes: Uint8Array): Promise<Action[]> {
  if (name.endsWith('.json')) return parseCommit(new TextDecoder().decode(bytes), name);
  return decodeCheckpointParquet(bytes, name);
}

export async function readDeltaSnapshot(
  store: ObjectStore,
  tableRoot: string,
  opts: { version?: number; timestampMs?: number } = {},
): Promise<DeltaSnapshot> {
  // A log file listed but gone when read: the log was cut meanwhile behind a newer checkpoint
  // (snapshot expiry, PROTOCOL.md §Metadata Cleanup), which covers every version still kept.
  // One fresh listing finds it; a version the cut removed is then not-found by the listing.
  try {
    return await readListedSnapshot(store, tableRoot, opts);
  } catch (e) {
    if (!isTwinlakeError(e, 'not-found')) throw e;
    return readListedSnapshot(store, tableRoot, opts);
  }
}

async function readListedSnapshot(store: ObjectStore, tableRoot: string, opts: { version?: number; timestampMs?: number }): Promise<DeltaSnapshot> {
  if (opts.version !== undefined && opts.timestampMs !== undefined) {
    throw invalidInput('delta log: expected a version or a timestamp, found both');
  }
  const hint = await readLastCheckpoint(store, tableRoot);
  // The newest version, or one at or after the hint's checkpoint (the checkpoint a writer makes
  // of the version it just wrote), replays from that checkpoint: the log before it is not listed.
  const fromHint = hint !== undefined && opts.timestampMs === undefined && (opts.version === undefined || opts.version >= hint.version);
  const listing =
    (fromHint ? ((await listingByProbe(store, tableRoot, hint)) ?? (await listingFromCheckpoint(store, tableRoot, hint))) : undefined) ?? (await listLog(store, tableRoot));
  if (listing.files.size === 0) throw notFound(`delta log: expected ${logPrefix(tableRoot)} in ${store.root}, found no log files`);
  const version = opts.timestampMs !== undefined ? await versionAt(store, tableRoot, listing, opts.timestampMs) : opts.version;
  const target = version ?? Infinity;
  const lastCheckpoint = hint && hint.version <= target ? { version: hint.version, ...(hint.parts !== undefined ? { parts: hint.parts } : {}) } : undefined;
  const names = [...listing.files.keys()];
  let segment = listLogSegment(names, { ...(version !== undefined ? { version } : {}), ...(lastCheckpoint ? { lastCheckpoint } : {}) });
  // A checkpoint known only from the hint must exist; a stale hint falls back to the listing.
  const unlisted = segment.checkpoint?.files.filter((f) => !listing.files.has(f)) ?? [];
  if (unlisted.length > 0) {
    const found = await Promise.all(unlisted.map((f) => store.head(logPrefix(tableRoot) + f)));
    if (found.some((h) => h === undefined)) segment = listLogSegment(names, version !== undefined ? { version } : {});
  }

  const commitsToRead = segment.commits.map((c) => c.version);
  const cp = segment.checkpoint;
  // The commit at the checkpoint's version holds that version's commitInfo (checkpoints drop it).
  if (cp && cp.version === segment.version && listing.files.has(commitPath(cp.version).slice('_delta_log/'.length))) {
    commitsToRead.unshift(cp.version);
  }
  const [checkpointActions, commits] = await Promise.all([
    cp ? readCheckpoint(store, tableRoot, cp.files) : Promise.resolve(undefined),
    Promise.all(
      commitsToRead.map(async (v): Promise<ReplayCommit> => {
        const c: ReplayCommit = { version: v, actions: await readCommit(store, tableRoot, v) };
        const modified = listing.files.get(commitPath(v).slice('_delta_log/'.length));
        if (modified !== undefined) c.modifiedMs = modified;
        return c;
      }),
    ),
  ]);
  return replay({ ...(cp && checkpointActions ? { checkpoint: { version: cp.version, actions: checkpointActions } } : {}), commits });
}

/** How many commits after the hint's checkpoint are looked for by name before the log is listed. */
const PROBE_LIMIT = 100;
const PROBE_BATCH = 10;

/**
 * For a read of the newest version (or one after the hint's checkpoint) when the hint names a
 * classic checkpoint: the checkpoint and the commits after it, each asked for by name, ten at a
 * time; versions are contiguous, so the first missing one ends the log. Nothing is listed (on
 * local disk a listing reads the whole folder, 10,000 commits and more; on S3 it pages through
 * it). Undefined when the checkpoint is not there or more than PROBE_LIMIT commits follow it (a
 * stale hint): the caller lists.
 */
async function listingByProbe(store: ObjectStore, tableRoot: string, hint: LastCheckpoint): Promise<LogListing | undefined> {
  if (hint.parts !== undefined && hint.parts > 1) return undefined;
  const prefix = logPrefix(tableRoot);
  const name = (rel: string) => rel.slice('_delta_log/'.length);
  const files = new Map<string, number>();
  const checkpoint = name(checkpointPath(hint.version));
  const [found, atCheckpoint] = await Promise.all([store.head(prefix + checkpoint), store.head(prefix + name(commitPath(hint.version)))]);
  if (!found) return undefined;
  files.set(checkpoint, found.modified);
  if (atCheckpoint) files.set(name(commitPath(hint.version)), atCheckpoint.modified);
  const head = (v: number) => store.head(prefix + name(commitPath(v)));
  for (let from = hint.version + 1; from <= hint.version + PROBE_LIMIT; from += PROBE_BATCH) {
    const heads = await Promise.all(Array.from({ length: PROBE_BATCH }, (_, i) => head(from + i)));
    const end = heads.findIndex((h) => h === undefined);
    for (const [i, h] of heads.entries()) if (h && (end < 0 || i < end)) files.set(name(commitPath(from + i)), h.modified);
    if (end < 0) continue;
    // A commit just past the first missing one is a gap, which the listing reports as such
    // rather than the log ending early.
    const after = [...heads.slice(end + 1, end + 3)];
    for (let v = from + heads.length; after.length < 2; v++) after.push(await head(v));
    return after.some((h) => h !== undefined) ? undefined : { files };
  }
  return undefined;
}

/**
 * For a read of the newest version: the log from the hint's checkpoint on (see listLogFrom),
 * when it holds a complete checkpoint at or after the hint, so that the segment to replay lies
 * inside it. Undefined when it does not (a stale hint, a missing part): the caller lists it all.
 */
async function listingFromCheckpoint(store: ObjectStore, tableRoot: string, hint: LastCheckpoint): Promise<LogListing | undefined> {
  const listing = await listLogFrom(store, tableRoot, hint.version);
  try {
    const lastCheckpoint = { version: hint.version, ...(hint.parts !== undefined ? { parts: hint.parts } : {}) };
    const checkpoint = listLogSegment([...listing.files.keys()], { lastCheckpoint }).checkpoint;
    return checkpoint && checkpoint.version >= hint.version && checkpoint.files.every((f) => listing.files.has(f)) ? listing : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Decoded checkpoint files, by store and key, while the file is the same one (size and
 * modification time): a checkpoint never changes once written, and one of a long-lived table
 * holds every live file and the tombstones of a week of commits (10,000 rows after 10,000
 * overwrites), so a process that reads the table again decodes only the commits after it.
 * Replay reads actions without changing them. The newest few files are kept.
 */
const decodedCheckpoints = new Map<string, { size: number; modified: number; actions: Action[] }>();
const DECODED_CHECKPOINTS_KEPT = 8;

async function decodeCheckpointFile(store: ObjectStore, key: string, name: string): Promise<Action[]> {
  const id = `${store.root}\u0000${key}`;
  const held = decodedCheckpoints.get(id);
  const info = held ? await store.head(key) : undefined;
  if (held && info && info.size === held.size && info.modified === held.modified) return held.actions;
  const bytes = await store.get(key);
  const actions = await decodeCheckpoint(name, bytes);
  const now = info ?? (await store.head(key));
  decodedCheckpoints.delete(id);
  if (now && now.size === bytes.length) {
    decodedCheckpoints.set(id, { size: now.size, modified: now.modified, actions });
    while (decodedCheckpoints.size > DECODED_CHECKPOINTS_KEPT) decodedCheckpoints.delete(decodedCheckpoints.keys().next().value!);
  }
  return actions;
}

async function readCheckpoint(store: ObjectStore, tableRoot: string, files: string[]): Promise<Action[]> {
  const prefix = logPrefix(tableRoot);
  const parts = await Promise.all(files.map((name) => decodeCheckpointFile(store, prefix + name, name)));
  const actions = parts.flat();
  const sidecars = checkpointSidecars(actions);
  if (sidecars.length === 0) return actions;
  const sidecarActions = await Promise.all(
    sidecars.map(async (s) => {
      const key = sidecarKey(store, prefix, s.path);
      return decodeCheckpointParquet(await store.get(key), key);
    }),
  );
  return resolveSidecars(actions, sidecarActions);
}

/** Sidecars live in `_delta_log/_sidecars/`; the action normally names just the file. */
function sidecarKey(store: ObjectStore, logPrefixKey: string, path: string): string {
  if (isUri(path)) {
    const rel = relativeTo(store.root, path);
    if (rel === undefined) throw unsupported(`delta checkpoint: sidecar ${path} is outside the store ${store.root}`);
    return decodePath(rel);
  }
  return `${logPrefixKey}_sidecars/${decodePath(path)}`;
}

/**
 * The newest version committed at or before `timestampMs`. Commit times come from each commit's
 * commitInfo (in-commit timestamp, else `timestamp`), else the file's modification time; they are
 * taken as non-decreasing, so a binary search reads only a few commits.
 */
async function versionAt(store: ObjectStore, tableRoot: string, listing: LogListing, timestampMs: number): Promise<number> {
  const versions: number[] = [];
  for (const name of listing.files.keys()) {
    const f = parseLogFileName(name);
    if (f?.kind === 'commit') versions.push(f.version);
  }
  versions.sort((a, b) => a - b);
  if (versions.length === 0) throw notFound('delta log: expected commit files to find a version by time, found none');
  const timeOf = async (v: number): Promise<number> => {
    const info = findCommitInfo(await readCommit(store, tableRoot, v));
    const ts = info?.inCommitTimestamp ?? info?.timestamp ?? listing.files.get(commitPath(v).slice('_delta_log/'.length));
    if (ts === undefined) throw dataInvalid(`delta log: commit ${v} has no timestamp`);
    return ts;
  };
  let lo = 0;
  let hi = versions.length - 1;
  if ((await timeOf(versions[0]!)) > timestampMs) {
    throw notFound(`delta log: no version committed at or before ${new Date(timestampMs).toISOString()}; the oldest kept is ${versions[0]}`);
  }
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if ((await timeOf(versions[mid]!)) <= timestampMs) lo = mid;
    else hi = mid - 1;
  }
  return versions[lo]!;
}

/** The newest version in the log, or undefined when the table has no Delta log. */
export async function latestDeltaVersion(store: ObjectStore, tableRoot: string): Promise<number | undefined> {
  const { files } = await listLog(store, tableRoot);
  let latest: number | undefined;
  for (const name of files.keys()) {
    const f = parseLogFileName(name);
    if ((f?.kind === 'commit' || f?.kind === 'checkpoint') && (latest === undefined || f.version > latest)) latest = f.version;
  }
  return latest;
}

/**
 * The newest commit of the log (see DeltaHead), or undefined when there is no Delta commit.
 * `near` is where the caller expects it (the Delta version a snapshot's summary names): the
 * commits there and just after are probed, so a write need not list a long log; a log elsewhere
 * is listed. `known` is a commit the caller wrote itself, with its size: when the probe finds it
 * to be the newest, at that size, it is not read again.
 */
export async function readDeltaHead(store: ObjectStore, tableRoot: string, near?: number, known?: WrittenHead): Promise<DeltaHead | undefined> {
  let newestSize: number | undefined;
  const exists = async (v: number) => {
    if (v < 0) return false;
    const h = await store.head(tableKey(tableRoot, commitPath(v)));
    if (h) newestSize = h.size;
    return h !== undefined;
  };
  let version: number | undefined;
  if (near !== undefined) {
    // Versions are contiguous: the newest is the last that exists, the one before the first that does not.
    if (await exists(near)) {
      let v = near;
      while (v < near + 8 && (await exists(v + 1))) v++;
      if (v < near + 8) version = v;
    } else if (await exists(near - 1)) version = near - 1;
  }
  if (version !== undefined && known?.head.version === version && known.size === newestSize) return { ...known.head };
  if (version === undefined) {
    const { files } = await listLog(store, tableRoot);
    for (const name of files.keys()) {
      const f = parseLogFileName(name);
      if (f?.kind === 'commit' && (version === undefined || f.version > version)) version = f.version;
    }
  }
  if (version === undefined) return undefined;
  const bytes = await store.get(tableKey(tableRoot, commitPath(version)));
  if (bytes.length === 0) return { version, empty: true };
  return headOfActions(version, parseCommit(new TextDecoder().decode(bytes), commitPath(version)));
}

/** A commit written by the caller: what `readDeltaHead` would read from it, and its size in bytes. */
export interface WrittenHead {
  head: DeltaHead;
  size: number;
}

/** The DeltaHead of commit `version` holding `actions`. */
export function headOfActions(version: number, actions: readonly Action[]): DeltaHead {
  const info = findCommitInfo(actions as Action[]);
  const head: DeltaHead = { version, empty: false };
  if (info?.icebergSnapshotId !== undefined) head.icebergSnapshotId = BigInt(info.icebergSnapshotId as bigint);
  if (info?.icebergSequenceNumber !== undefined) head.icebergSequenceNumber = Number(info.icebergSequenceNumber);
  const ts = info?.inCommitTimestamp ?? info?.timestamp;
  if (ts !== undefined) head.timestampMs = ts;
  return head;
}

/** The Iceberg snapshot Delta version `version` mirrors (its `commitInfo.icebergSnapshotId`), if any. */
export async function icebergSnapshotOf(store: ObjectStore, tableRoot: string, version: number): Promise<bigint | undefined> {
  let actions: Action[];
  try {
    actions = await readCommit(store, tableRoot, version);
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) return undefined;
    throw e;
  }
  const id = findCommitInfo(actions)?.icebergSnapshotId;
  return id === undefined ? undefined : BigInt(id as bigint);
}

/**
 * The newest Delta version that mirrors Iceberg snapshot `snapshotId`, read from the log's
 * commitInfo (DESIGN.md §1), never assumed: the newest commit first (the current snapshot's, as a
 * rule), then `hint` (the snapshot's own `delta-version`), then the commits still in the log,
 * newest first. After a rollback two versions mirror the same snapshot, with the same live files.
 */
export async function deltaVersionOfSnapshot(store: ObjectStore, tableRoot: string, snapshotId: bigint, hint?: number): Promise<number | undefined> {
  const head = await readDeltaHead(store, tableRoot, hint);
  if (head?.icebergSnapshotId === snapshotId) return head.version;
  if (hint !== undefined && (await icebergSnapshotOf(store, tableRoot, hint)) === snapshotId) return hint;
  const { files } = await listLog(store, tableRoot);
  const versions = [...files.keys()]
    .map((name) => parseLogFileName(name))
    .filter((f): f is NonNullable<typeof f> => f?.kind === 'commit')
    .map((f) => f.version)
    .sort((a, b) => b - a);
  for (const v of versions) {
    if (v === hint) continue;
    const bytes = await store.get(tableKey(tableRoot, commitPath(v)));
    if (bytes.length === 0) continue;
    const id = findCommitInfo(parseCommit(new TextDecoder().decode(bytes), commitPath(v)))?.icebergSnapshotId;
    if (id !== undefined && BigInt(id as bigint) === snapshotId) return v;
  }
  return undefined;
}

/** Writes version `version` create-only; false when another writer already took it. */
export async function writeDeltaCommit(store: ObjectStore, tableRoot: string, version: number, actions: Action[]): Promise<boolean> {
  return store.putIfAbsent(tableKey(tableRoot, commitPath(version)), serializeCommit(actions));
}

// --- scans -------------------------------------------------------------------------------------

/**
 * What the engine reads for a snapshot: every live file with its partition values as constants,
 * columns found by physical name (mapping modes `none`/`name`) or Parquet field ID (mode `id`).
 */
export function deltaScanTask(snapshot: DeltaSnapshot, tableRootUri: string): ScanTask {
  checkReadSupported(snapshot.protocol);
  const { metadata, protocol } = snapshot;
  if (metadata.format.provider.toLowerCase() !== 'parquet') {
    throw unsupported(`delta: expected data files in parquet format, found ${JSON.stringify(metadata.format.provider)}`);
  }
  const mode = columnMappingMode(protocol, metadata.configuration);
  const { schema, physicalNames } = fromDeltaSchema(metadata.schemaString, mode);

  const partitions = metadata.partitionColumns.map((name) => {
    const field = schema.fields.find((f) => f.name === name) ?? schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase());
    if (!field) throw dataInvalid(`delta metadata: partition column ${JSON.stringify(name)} is not a top-level column of the schema`);
    return { field, key: physicalNames.get(field.id)! };
  });

  const files: ScanFile[] = snapshot.files.map((add) => {
    const file: ScanFile = { path: dataFileUri(tableRootUri, add.path) };
    if (add.deletionVector) file.deletes = { positions: [deletionVectorSource(add.deletionVector, tableRootUri, add.path)] };
    if (add.stats !== undefined) {
      const n = parseStats(add.stats, `${add.path} stats`).numRecords;
      if (n !== undefined) file.recordCount = n;
    }
    if (partitions.length > 0) {
      const constants = new Map<number, LiteralValue>();
      for (const { field, key } of partitions) {
        const raw = key in add.partitionValues ? add.partitionValues[key] : findCaseInsensitive(add.partitionValues, key);
        constants.set(field.id, parsePartitionValue(raw, field.type, field.name));
      }
      file.constants = constants;
    }
    return file;
  });

  return { schema, resolution: mode === 'id' ? 'field-id' : 'name', physicalNames, files };
}

/**
 * Where the engine finds a file's deleted rows (PROTOCOL.md §Deletion Vectors): an inline DV is
 * decoded here; a DV in a file is read at scan time, `sizeInBytes` plus its size and CRC fields.
 */
function deletionVectorSource(dv: DeletionVectorDescriptor, tableRootUri: string, addPath: string): PositionDeletes {
  if (dv.storageType === 'i') {
    const bitmap = inlineDeletionVector(dv);
    if (bitmap.cardinality !== dv.cardinality) {
      throw dataInvalid(`delta: inline deletion vector of ${addPath} expected cardinality ${dv.cardinality}, found ${bitmap.cardinality}`);
    }
    return { kind: 'bitmap', bitmap };
  }
  const path = deletionVectorLocation(dv, tableRootUri)!;
  return { kind: 'vector', path, offset: dv.offset ?? 0, length: dv.sizeInBytes + 8, cardinality: dv.cardinality };
}

function findCaseInsensitive(values: Record<string, string | null>, key: string): string | null | undefined {
  const lower = key.toLowerCase();
  for (const [k, v] of Object.entries(values)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

/**
 * The absolute URI of a data file named by an `add` path (PROTOCOL.md §Add File: a relative path
 * or an absolute URI, percent-encoded). Twinlake locations are raw strings (core/uri.ts), so the
 * path is decoded once: `a%20b%253A` names the folder `a b%3A` that Spark created on disk.
 */
export function dataFileUri(tableRootUri: string, path: string): string {
  const decoded = decodePath(path);
  return isUri(decoded) ? decoded : joinUri(tableRootUri, decoded);
}

/** One committed version of a Delta table, for `history`. */
export interface DeltaCommitSummary {
  version: number;
  timestampMs?: number;
  operation?: string;
  addedFiles: number;
  removedFiles: number;
  addedRecords: number;
  icebergSnapshotId?: bigint;
}

/**
 * The commits still in the log (older ones may have been cleaned up after a checkpoint), newest
 * first, `limit` at most.
 */
export async function deltaHistory(store: ObjectStore, tableRoot: string, limit = Infinity): Promise<DeltaCommitSummary[]> {
  const listing = await listLog(store, tableRoot);
  const versions = [...listing.files.keys()]
    .map((name) => parseLogFileName(name))
    .filter((f): f is NonNullable<typeof f> => f !== undefined && f.kind === 'commit')
    .map((f) => f.version)
    .sort((a, b) => b - a)
    .slice(0, limit);
  return Promise.all(
    versions.map(async (version) => {
      const actions = await readCommit(store, tableRoot, version);
      const info = findCommitInfo(actions);
      let addedFiles = 0;
      let removedFiles = 0;
      let addedRecords = 0;
      for (const a of actions) {
        if ('add' in a) {
          addedFiles++;
          addedRecords += a.add.stats ? (parseStats(a.add.stats).numRecords ?? 0) : 0;
        } else if ('remove' in a) removedFiles++;
      }
      return {
        version,
        timestampMs: info?.inCommitTimestamp ?? info?.timestamp,
        operation: info?.operation,
        addedFiles,
        removedFiles,
        addedRecords,
        icebergSnapshotId: info?.icebergSnapshotId,
      };
    }),
  );
}
