import { dataInvalid } from '../../core/errors.ts';
import { schemeAndAuthority } from '../../core/uri.ts';
import type { EqualityDeleteFile, PositionDeletes, ScanDeletes } from '../scan-task.ts';
import { POSITION_DELETE_FILE_PATH_ID } from './schema.ts';
import { bytesToHex } from './single-value.ts';
import { isUnpartitioned, specById } from './table-metadata.ts';
import { DataFileContent, EntryStatus, type DataFile, type ManifestEntry, type TableMetadata } from './types.ts';

/**
 * Pure scan planning over manifest entries that already went through inheritance
 * (spec §Scan Planning): DELETED entries are history, not part of the snapshot.
 */

export function liveEntries(entries: readonly ManifestEntry[]): ManifestEntry[] {
  return entries.filter((e) => e.status !== EntryStatus.Deleted);
}

/** The data files of a snapshot: live entries with content DATA. */
export function liveDataFiles(entries: readonly ManifestEntry[]): DataFile[] {
  return liveEntries(entries)
    .map((e) => e['data-file'])
    .filter((f) => f.content === DataFileContent.Data);
}

/** The position/equality delete files and deletion vectors of a snapshot. */
export function liveDeleteFiles(entries: readonly ManifestEntry[]): DataFile[] {
  return liveEntries(entries)
    .map((e) => e['data-file'])
    .filter((f) => f.content !== DataFileContent.Data);
}

// --- row-level deletes (spec §Scan Planning, §Delete Formats) ---------------------------------


interface Sequenced {
  file: DataFile;
  seq: number;
  partition: string;
}

/**
 * Which delete files apply to which data file, by the spec's scope rules (§Scan Planning):
 * - a deletion vector: same `referenced_data_file`, data sequence number ≤ the DV's, same partition;
 * - a position delete file: same referenced file when it names one (else its `file_path` bounds
 *   must admit the data file), sequence number ≤, same partition, and no DV for the data file
 *   (a DV replaces the position deletes written before it, §Deletion Vectors);
 * - an equality delete file: sequence number strictly <, same partition or an unpartitioned spec.
 * Dangling deletes (naming files no longer live) simply match nothing.
 */
export function planDeletes(
  metadata: TableMetadata,
  data: DataFile[],
  deletes: DataFile[],
  sequenceNumbers: Map<DataFile, number | undefined>,
): (file: DataFile) => ScanDeletes | undefined {
  const applicable = applicableDeletes(metadata, data, deletes, sequenceNumbers);
  return (file) => {
    const found = applicable(file);
    if (!found) return undefined;
    const path = file['file-path'];
    const positions: PositionDeletes[] = found.dv
      ? [{ kind: 'vector', path: found.dv['file-path'], offset: found.dv['content-offset']!, length: found.dv['content-size-in-bytes']!, cardinality: found.dv['record-count'], dataFile: path }]
      : found.positionFiles.map((p) => ({ kind: 'position-file', path: p['file-path'], dataFile: path, ...(p['referenced-data-file'] === path ? { only: true } : {}) }));
    const equality: EqualityDeleteFile[] = found.equality.map((e) => ({ path: e['file-path'], equalityIds: e['equality-ids']! }));
    return { ...(positions.length > 0 ? { positions } : {}), ...(equality.length > 0 ? { equality } : {}) };
  };
}

/** The delete files that apply to one data file: its deletion vector, or position delete files; equality delete files. */
export interface ApplicableDeletes {
  dv?: DataFile;
  positionFiles: DataFile[];
  equality: DataFile[];
}

/** The scope rules of `planDeletes`, naming the delete files themselves (writers replace them). */
export function applicableDeletes(
  metadata: TableMetadata,
  data: DataFile[],
  deletes: DataFile[],
  sequenceNumbers: Map<DataFile, number | undefined>,
): (file: DataFile) => ApplicableDeletes | undefined {
  if (deletes.length === 0 || data.length === 0) return () => undefined;
  const seqOf = (f: DataFile): number => {
    const s = sequenceNumbers.get(f);
    if (s === undefined) throw dataInvalid(`iceberg manifest: ${f['file-path']} has no data sequence number; expected one in a table with row-level deletes`);
    return s;
  };
  const dvs = new Map<string, Sequenced[]>();
  const positionsByFile = new Map<string, Sequenced[]>();
  const positionsByPartition = new Map<string, Sequenced[]>();
  const equalityGlobal: Sequenced[] = [];
  const equalityByPartition = new Map<string, Sequenced[]>();
  const add = (m: Map<string, Sequenced[]>, key: string, s: Sequenced) => {
    const list = m.get(key);
    if (list) list.push(s);
    else m.set(key, [s]);
  };
  for (const d of deletes) {
    const s: Sequenced = { file: d, seq: seqOf(d), partition: partitionKey(metadata, d) };
    const ref = d['referenced-data-file'];
    if (d.content === DataFileContent.PositionDeletes) {
      if (d['file-format'] === 'PUFFIN') {
        if (ref === undefined || d['content-offset'] === undefined || d['content-size-in-bytes'] === undefined) {
          throw dataInvalid(`iceberg manifest: deletion vector in ${d['file-path']} lacks referenced_data_file, content_offset or content_size_in_bytes`);
        }
        add(dvs, ref, s);
      } else if (ref !== undefined) add(positionsByFile, ref, s);
      else add(positionsByPartition, s.partition, s);
    } else if (d.content === DataFileContent.EqualityDeletes) {
      if (!d['equality-ids']?.length) throw dataInvalid(`iceberg manifest: equality delete file ${d['file-path']} has no equality_ids`);
      const spec = specById(metadata, d['spec-id']);
      if (isUnpartitioned(spec)) equalityGlobal.push(s);
      else add(equalityByPartition, s.partition, s);
    } else {
      throw dataInvalid(`iceberg manifest: expected delete content 1 or 2, found ${d.content} for ${d['file-path']}`);
    }
  }

  return (file) => {
    const seq = seqOf(file);
    const partition = partitionKey(metadata, file);
    const path = file['file-path'];
    const dv = (dvs.get(path) ?? []).filter((d) => d.seq >= seq && d.partition === partition);
    if (dv.length > 1) throw dataInvalid(`iceberg: data file ${path} has ${dv.length} deletion vectors; expected at most one`);
    const positionFiles =
      dv.length === 1
        ? []
        : [...(positionsByFile.get(path) ?? []), ...(positionsByPartition.get(partition) ?? [])]
            .filter((p) => p.seq >= seq && p.partition === partition && pathWithinBounds(p.file, path))
            .map((p) => p.file);
    const equality = [...equalityGlobal, ...(equalityByPartition.get(partition) ?? [])].filter((e) => e.seq > seq).map((e) => e.file);
    if (dv.length === 0 && positionFiles.length === 0 && equality.length === 0) return undefined;
    return { ...(dv.length === 1 ? { dv: dv[0]!.file } : {}), positionFiles, equality };
  };
}

/**
 * A file's partition as a comparable key: spec ID and values (spec §Scan Planning: both must be
 * equal; floats compare by bit layout, so -0 and 0 differ and NaNs are equal).
 */
function partitionKey(metadata: TableMetadata, file: DataFile): string {
  const spec = specById(metadata, file['spec-id']);
  const parts = spec.fields.map((f) => valueKey(file.partition[f.name]));
  return `${file['spec-id']}|${parts.join('|')}`;
}

function valueKey(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (v instanceof Uint8Array) return `x${bytesToHex(v)}`;
  if (typeof v === 'number' && Object.is(v, -0)) return 'n-0';
  if (typeof v === 'string') return `s${JSON.stringify(v)}`;
  return `${typeof v}${String(v)}`;
}

/**
 * Whether a position delete file's `file_path` bounds (when kept) admit `path`. The engine
 * matches delete rows on the path without scheme and authority (a relocated table keeps the old
 * URIs in its delete files), so a bound spelled with another scheme or host is not used.
 */
function pathWithinBounds(deleteFile: DataFile, path: string): boolean {
  const decoder = new TextDecoder();
  const usable = (b: Uint8Array | undefined) => (b && schemeAndAuthority(decoder.decode(b)) === schemeAndAuthority(path) ? b : undefined);
  const lower = usable(deleteFile['lower-bounds']?.get(POSITION_DELETE_FILE_PATH_ID));
  const upper = usable(deleteFile['upper-bounds']?.get(POSITION_DELETE_FILE_PATH_ID));
  if (!lower && !upper) return true;
  const bytes = new TextEncoder().encode(path);
  return (!lower || compareBytes(lower, bytes) <= 0) && (!upper || compareBytes(bytes, upper) <= 0);
}


function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
