import { invalidInput, notFound } from '../../core/errors.ts';
import { applicableDeletes } from '../../format/iceberg/scan.ts';
import { deletionVectorLocation } from '../../format/delta/deletion-vector.ts';
import { parseStats } from '../../format/delta/stats.ts';
import type { DataFile } from '../../format/iceberg/types.ts';
import { dataFileUri, readDeltaSnapshot } from '../delta/delta-log.ts';
import { deltaVersionOf } from '../../format/dual/summary-keys.ts';
import { liveFiles } from './iceberg-scan.ts';
import { mirroredTravel, mirroringVersion, parseAsOf, pickIcebergSnapshot, type ReadFormat, type TableSource, type TimeTravel } from './reader.ts';

/**
 * The live files of a table version, for handing to another engine: every data file a read of
 * that version scans, each with the delete files that remove some of its rows. A glob over
 * `data/` is not this list: it also finds files an overwrite, merge or delete replaced, which
 * stay until maintenance removes them, so time travel keeps working.
 */
export interface LiveFile {
  /** The data file (absolute URI). */
  path: string;
  /** Rows stored in the file, deleted ones included. */
  records: number;
  bytes: number;
  /** What removes rows of this file; read it with the file, or the file over-counts. */
  deletes: LiveDelete[];
}

export interface LiveDelete {
  /**
   * `deletion-vector`: a Roaring bitmap of positions at `offset` (`length` bytes) of `path` — a
   * Puffin `deletion-vector-v1` blob (Iceberg v3) or a Delta DV file; `inline` for a Delta DV
   * stored in the log itself. `position-deletes`: an Iceberg position delete file (Parquet
   * `file_path`, `pos`); `equality-deletes`: an Iceberg equality delete file on `equalityIds`.
   */
  kind: 'deletion-vector' | 'position-deletes' | 'equality-deletes';
  path?: string;
  /**
   * Where the vector is, as its format records it: Iceberg's Puffin blob offset and size (the
   * whole framed vector); Delta's `offset` (of the vector's 4-byte size prefix) and `sizeInBytes`.
   */
  offset?: number;
  length?: number;
  /** Rows it deletes (a DV's cardinality; a delete file's record count). */
  records: number;
  inline?: boolean;
  equalityIds?: number[];
}

export interface LiveFiles {
  format: ReadFormat;
  snapshotId?: bigint;
  deltaVersion?: number;
  files: LiveFile[];
}

export async function listLiveFiles(source: TableSource, format: ReadFormat | undefined, travel: TimeTravel): Promise<LiveFiles> {
  const given = [travel.snapshotId, travel.version, travel.asOf].filter((x) => x !== undefined).length;
  if (given > 1) throw invalidInput('files: give at most one of snapshot, version and as-of');
  const metadata = await source.iceberg();
  const chosen = format ?? (metadata ? 'iceberg' : 'delta');
  if (chosen === 'iceberg') {
    if (!metadata) throw notFound(`iceberg: no iceberg metadata for the table at ${source.location}`);
    const snapshot = pickIcebergSnapshot(metadata, await mirroredTravel(source, travel));
    if (!snapshot) return { format: 'iceberg', files: [] };
    const { data, deletes, sequenceNumbers } = await liveFiles(source.io, metadata, snapshot);
    const applicable = applicableDeletes(metadata, data, deletes, sequenceNumbers);
    const files = data.map((f): LiveFile => {
      const found = applicable(f);
      const out: LiveDelete[] = [];
      if (found?.dv) out.push({ kind: 'deletion-vector', path: found.dv['file-path'], offset: found.dv['content-offset'], length: found.dv['content-size-in-bytes'], records: found.dv['record-count'] });
      for (const p of found?.positionFiles ?? []) out.push({ kind: 'position-deletes', path: p['file-path'], records: p['record-count'] });
      for (const e of found?.equality ?? []) out.push({ kind: 'equality-deletes', path: e['file-path'], records: e['record-count'], equalityIds: e['equality-ids'] ?? [] });
      return dataFile(f, out);
    });
    return { format: 'iceberg', snapshotId: snapshot['snapshot-id'], deltaVersion: deltaVersionOf(snapshot), files };
  }
  let version = travel.version;
  if (travel.snapshotId !== undefined) {
    if (!metadata) throw invalidInput('files: a snapshot ID needs the iceberg metadata to find its delta version');
    version = await mirroringVersion(source, pickIcebergSnapshot(metadata, { snapshotId: travel.snapshotId })!);
  }
  const { store, key } = source.io.storeAt(source.location);
  const snap = await readDeltaSnapshot(store, key, { version, timestampMs: travel.asOf !== undefined ? parseAsOf(travel.asOf) : undefined });
  const files = snap.files.map((add): LiveFile => {
    const dv = add.deletionVector;
    const deletes: LiveDelete[] = [];
    if (dv) {
      const path = deletionVectorLocation(dv, source.location);
      // A DV in a file starts with its 4-byte size at `offset` (PROTOCOL.md §Deletion Vector Format).
      deletes.push(path ? { kind: 'deletion-vector', path, offset: dv.offset ?? 1, length: dv.sizeInBytes, records: dv.cardinality } : { kind: 'deletion-vector', inline: true, records: dv.cardinality });
    }
    return { path: dataFileUri(source.location, add.path), records: add.stats ? (parseStats(add.stats).numRecords ?? 0) : 0, bytes: add.size, deletes };
  });
  return { format: 'delta', deltaVersion: snap.version, files };
}

function dataFile(f: DataFile, deletes: LiveDelete[]): LiveFile {
  return { path: f['file-path'], records: f['record-count'], bytes: f['file-size-in-bytes'], deletes };
}
