import { fstatSync, statSync } from 'node:fs';
import { errorMessage, invalidInput, notFound } from '../../core/errors.ts';
import type { FileIO } from '../../io/file-io.ts';
import type { DuckDBSession } from '../../engine/duckdb-session.ts';
import { copyScanTo, streamScan } from '../../engine/read-scan.ts';
import { snapshotAsOf, snapshotById } from '../../format/iceberg/table-metadata.ts';
import type { Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import type { ScanTask } from '../../format/scan-task.ts';
import { deltaScanTask, deltaVersionOfSnapshot, icebergSnapshotOf, readDeltaSnapshot } from '../delta/delta-log.ts';
import { deltaVersionOf } from '../../format/dual/summary-keys.ts';
import { enginePath, enginePaths, planIcebergScan } from './iceberg-scan.ts';
import { bindFilter, pruneDeltaTask } from './scan-filter.ts';
import { taskFiles, withLocalTask, type CacheLease, type ReadCache } from './read-cache.ts';

export type ReadFormat = 'iceberg' | 'delta';

/**
 * Where an export goes: a local file (path or `file:` URI), or a stream (standard output, a
 * socket, a file stream) that receives the rows as they are read. A stream on a pipe or
 * /dev/null has the engine write into its descriptor directly (see engineWritablePath).
 */
export type ExportTarget = string | NodeJS.WritableStream;

/**
 * A write function for `out` that waits while its buffer is full (so a slow consumer holds the
 * engine back instead of filling memory) and fails once the stream has failed or closed.
 */
export function streamWriter(out: NodeJS.WritableStream): (bytes: Uint8Array) => Promise<void> | void {
  let failure: Error | undefined;
  const onError = (e: Error) => (failure ??= e);
  out.on('error', onError);
  return (bytes) => {
    if (failure) throw failure;
    if (out.write(bytes)) return;
    return new Promise<void>((resolve, reject) => {
      const done = (e?: Error) => {
        out.off('drain', done);
        out.off('error', done);
        out.off('close', closed);
        if (e) reject(e);
        else resolve();
      };
      const closed = () => done(failure ?? new Error('export: the output stream closed before the rows were written'));
      out.on('drain', done);
      out.on('error', done);
      out.on('close', closed);
    });
  };
}

/** Which state of the table to read; at most one of snapshotId, version, asOf. */
export interface TimeTravel {
  /** An Iceberg snapshot ID. */
  snapshotId?: bigint;
  /** A Delta version. */
  version?: number;
  /** A point in time: the table as it was then. */
  asOf?: Date | string | number;
}

export interface ReadPlan {
  format: ReadFormat;
  task: ScanTask;
  snapshotId?: bigint;
  deltaVersion?: number;
}

/** Where a table's two projections live. `iceberg` is undefined when the table has no metadata. */
export interface TableSource {
  io: FileIO;
  location: string;
  iceberg(): Promise<TableMetadata | undefined>;
}

/** Where a scan's files are: the FileIO that reaches them and the cache remote ones are copied into. */
export interface ScanFiles {
  io: FileIO;
  cache: ReadCache;
}

/**
 * Data files a streamed export fetches ahead of the engine, in groups of this many: one group
 * is read while the next is fetched, so the read cache holds about two groups whatever the
 * table's size. A file is one group's when the table is local (nothing is fetched).
 */
export const STREAM_GROUP_FILES = 8;

/** Writes a planned read to `target` (see ExportTarget): a file by the engine's own writer, a stream as it is read. */
export async function exportScan(session: DuckDBSession, task: ScanTask, target: ExportTarget, opts: { output: 'json' | 'csv'; limit?: number }, files: ScanFiles): Promise<void> {
  if (typeof target === 'string') {
    return withLocalTask(files.cache, files.io, task, (local) => copyScanTo(session, local, { format: opts.output, path: target, limit: opts.limit }));
  }
  const write = streamWriter(target);
  const remote = task.files.some((f) => files.io.localPath(f.path) === undefined);
  if (!remote || task.files.length <= STREAM_GROUP_FILES) {
    await withLocalTask(files.cache, files.io, task, async (local) => {
      if (await engineWrites(session, local, target, opts)) return;
      await streamScan(session, local, { format: opts.output, limit: opts.limit }, write);
    });
    return;
  }
  // Rows come file by file in task order, so consecutive groups of files stream the same rows
  // (deletes and the filter apply per file); the limit carries over from group to group.
  const groups: ScanTask[] = [];
  for (let i = 0; i < task.files.length; i += STREAM_GROUP_FILES) groups.push({ ...task, files: task.files.slice(i, i + STREAM_GROUP_FILES) });
  let left = opts.limit;
  let next: Promise<CacheLease> | undefined = files.cache.acquire(files.io, taskFiles(groups[0]!), task.fileSizes);
  try {
    for (let g = 0; g < groups.length; g++) {
      const lease = await next!;
      next = undefined;
      try {
        if (g + 1 < groups.length && left !== 0) {
          next = files.cache.acquire(files.io, taskFiles(groups[g + 1]!), task.fileSizes);
          next.catch(() => undefined);
        }
        if (left === 0 && !(g === 0 && opts.output === 'csv')) break;
        const rows = await streamScan(session, lease.task(groups[g]!), { format: opts.output, limit: left, header: g === 0 }, write);
        if (left !== undefined) left = Math.max(0, left - rows);
      } finally {
        lease.release();
      }
    }
  } finally {
    if (next) await next.then((l) => l.release(), () => undefined);
  }
}

/**
 * Where the engine can write into the descriptor behind `out` itself, or undefined. Only on
 * Linux, where opening `/dev/fd/N` makes a new open file of its own (elsewhere it shares the
 * descriptor's, which node may have made non-blocking), and only a pipe or /dev/null: for a
 * regular file the new open file starts at offset 0 and truncates (a shell's `>>` would lose
 * what the file held); a socket cannot be opened that way (ENXIO); a terminal is left to the
 * stream (its output is small and the speed does not matter there).
 */
export function engineWritablePath(out: NodeJS.WritableStream): string | undefined {
  const fd = (out as { fd?: unknown }).fd;
  if (process.platform !== 'linux' || typeof fd !== 'number') return undefined;
  try {
    const st = fstatSync(fd);
    if (st.isFIFO()) return `/dev/fd/${fd}`;
    if (st.isCharacterDevice() && st.rdev === statSync('/dev/null').rdev) return '/dev/null';
  } catch {
    // A descriptor that cannot be examined is left to the stream.
  }
  return undefined;
}

/**
 * Lets the engine's own writer put the rows into `out` when it can open its descriptor (see
 * engineWritablePath): the same COPY as a file export, so the bytes are the file export's, and
 * none of them pass through JavaScript. Resolves false, having written nothing, when the stream
 * must carry the rows instead: the descriptor is not one the engine can open, or the engine
 * could not open or lock it (DuckDB locks what it writes; another process writing into the same
 * pipe or /dev/null with DuckDB holds that lock).
 */
async function engineWrites(session: DuckDBSession, task: ScanTask, out: NodeJS.WritableStream, opts: { output: 'json' | 'csv'; limit?: number }): Promise<boolean> {
  const path = engineWritablePath(out);
  if (path === undefined) return false;
  // What was written to the stream before goes out first: the engine writes around its buffer.
  await new Promise<void>((resolve, reject) => out.write(new Uint8Array(0), (e) => (e ? reject(e) : resolve())));
  try {
    await copyScanTo(session, task, { format: opts.output, path, limit: opts.limit });
    return true;
  } catch (e) {
    const message = errorMessage(e);
    if (!message.includes(`"${path}"`)) throw e;
    if (/Cannot open file|Could not set lock on file/.test(message)) return false;
    if (/Broken pipe/.test(message)) {
      // The reader closed the pipe (`twinlake read … | head`): the stream fails as it would
      // had it written the rows itself, and its listeners hear so.
      const closed = Object.assign(new Error('write EPIPE'), { code: 'EPIPE', errno: -32, syscall: 'write' });
      if (out.listenerCount('error') > 0) out.emit('error', closed);
      throw closed;
    }
    throw e;
  }
}

export function parseAsOf(asOf: Date | string | number): number {
  if (asOf instanceof Date) return asOf.getTime();
  if (typeof asOf === 'number') return asOf;
  const ms = /^\d+$/.test(asOf) ? Number(asOf) : Date.parse(asOf);
  if (!Number.isFinite(ms)) throw invalidInput(`read: --as-of expects an ISO-8601 time or epoch milliseconds, found ${JSON.stringify(asOf)}`);
  return ms;
}

export async function planRead(source: TableSource, format: ReadFormat | undefined, travel: TimeTravel & { where?: string }): Promise<ReadPlan> {
  const given = [travel.snapshotId, travel.version, travel.asOf].filter((x) => x !== undefined).length;
  if (given > 1) throw invalidInput('read: give at most one of snapshot, version and as-of');
  // A Delta read needs the Iceberg metadata only to find the version a snapshot ID names.
  const metadata = format !== 'delta' || travel.snapshotId !== undefined ? await source.iceberg() : undefined;
  const chosen = format ?? (metadata ? 'iceberg' : 'delta');
  if (chosen === 'iceberg') {
    if (!metadata) throw notFound(`iceberg: no iceberg metadata for the table at ${source.location}`);
    const snapshot = pickIcebergSnapshot(metadata, await mirroredTravel(source, travel));
    const task = await planIcebergScan(source.io, metadata, snapshot, { timeTravel: given > 0, where: travel.where });
    return { format: 'iceberg', task, snapshotId: snapshot?.['snapshot-id'], deltaVersion: snapshot ? deltaVersionOf(snapshot) : undefined };
  }
  let version = travel.version;
  if (travel.snapshotId !== undefined) {
    if (!metadata) throw invalidInput('read: a snapshot ID needs the iceberg metadata to find its delta version');
    version = await mirroringVersion(source, requireSnapshot(metadata, travel.snapshotId));
  }
  const { store, key } = source.io.storeAt(source.location);
  const snapshot = await readDeltaSnapshot(store, key, {
    version,
    timestampMs: travel.asOf !== undefined ? parseAsOf(travel.asOf) : undefined,
  });
  const all = deltaScanTask(snapshot, source.location);
  const pruned = pruneDeltaTask(all, snapshot, bindFilter(travel.where, all.schema));
  // The engine opens each file where the FileIO keeps it, as for an Iceberg read.
  const files = pruned.files.map((f) => ({ ...f, path: enginePath(source.io, f.path), ...(f.deletes ? { deletes: enginePaths(source.io, f.deletes) } : {}) }));
  return { format: 'delta', task: { ...pruned, files }, deltaVersion: snapshot.version };
}

/**
 * Time travel to a Delta version, for the Iceberg side: the snapshot the version mirrors, as its
 * commitInfo names it (a version written by a sync, after a rollback or for another engine's
 * snapshot, is named by no snapshot's `delta-version`); other travel is unchanged.
 */
export async function mirroredTravel(source: TableSource, travel: TimeTravel): Promise<TimeTravel> {
  if (travel.version === undefined) return travel;
  const { store, key } = source.io.storeAt(source.location);
  const snapshotId = await icebergSnapshotOf(store, key, travel.version);
  return snapshotId === undefined ? travel : { snapshotId };
}

/** The Delta version mirroring `snapshot`, read from the log (see deltaVersionOfSnapshot). */
export async function mirroringVersion(source: TableSource, snapshot: Snapshot): Promise<number> {
  const { store, key } = source.io.storeAt(source.location);
  const version = await deltaVersionOfSnapshot(store, key, snapshot['snapshot-id'], deltaVersionOf(snapshot));
  if (version === undefined) throw notFound(`delta: no delta version mirrors iceberg snapshot ${snapshot['snapshot-id']}`);
  return version;
}

export function pickIcebergSnapshot(metadata: TableMetadata, travel: TimeTravel): Snapshot | undefined {
  if (travel.snapshotId !== undefined) return requireSnapshot(metadata, travel.snapshotId);
  if (travel.version !== undefined) {
    const s = metadata.snapshots.find((x) => deltaVersionOf(x) === travel.version);
    if (!s) throw notFound(`iceberg: no snapshot mirrors delta version ${travel.version}`);
    return s;
  }
  if (travel.asOf !== undefined) {
    const ms = parseAsOf(travel.asOf);
    const s = snapshotAsOf(metadata, ms);
    if (!s) throw notFound(`iceberg: the table has no snapshot at or before ${new Date(ms).toISOString()}`);
    return s;
  }
  const id = metadata['current-snapshot-id'];
  return id === undefined || id === null ? undefined : requireSnapshot(metadata, id);
}

function requireSnapshot(metadata: TableMetadata, id: bigint): Snapshot {
  const s = snapshotById(metadata, id);
  if (!s) throw notFound(`iceberg: no snapshot ${id} (the table has ${metadata.snapshots.length} snapshots)`);
  return s;
}
