import { dataInvalid } from '../core/errors.ts';
import { fileUri, localPath, schemeAndAuthority } from '../core/uri.ts';
import type { FileIO } from '../io/file-io.ts';
import { bytesToHex, fromBinary } from '../spec/iceberg/single-value.ts';
import { indexById, parseNameMapping, POSITION_DELETE_FILE_PATH_ID } from '../spec/iceberg/schema.ts';
import { currentSchema, isUnpartitioned, schemaById, specById } from '../spec/iceberg/table-metadata.ts';
import { bindFilter, dataFileMatches, emptyExplain, manifestMatches, type Filter } from './scan-filter.ts';
import { DataFileContent, type DataFile, type NestedField, type Schema, type Snapshot, type TableMetadata } from '../spec/iceberg/types.ts';
import type { EqualityDeleteFile, LiteralValue, PositionDeletes, ScanDeletes, ScanExplain, ScanFile, ScanTask } from '../spec/scan-task.ts';
import { readManifestEntries, readManifestList } from './manifest-io.ts';
import { Props, readPhysicalNames } from './table-properties.ts';

/**
 * The live files of a snapshot (spec §Scan Planning): data files (pruned by the filter) and
 * delete files, with each file's data sequence number.
 */
export async function liveFiles(
  io: FileIO,
  metadata: TableMetadata,
  snapshot: Snapshot,
  pruning?: { filter?: Filter; schema: Schema; explain: ScanExplain },
): Promise<{ data: DataFile[]; deletes: DataFile[]; sequenceNumbers: Map<DataFile, number | undefined> }> {
  const data: DataFile[] = [];
  const deletes: DataFile[] = [];
  const sequenceNumbers = new Map<DataFile, number | undefined>();
  const all = await readManifestList(io, snapshot['manifest-list']);
  const filter = pruning?.filter;
  const manifests = all.filter((m) => manifestMatches(filter, m, specById(metadata, m['partition-spec-id']), pruning?.schema ?? currentSchema(metadata)));
  if (pruning) {
    pruning.explain.manifests += all.length;
    pruning.explain.manifestsSkipped += all.length - manifests.length;
  }
  const entryLists = await Promise.all(manifests.map((m) => readManifestEntries(io, m, metadata)));
  for (const entries of entryLists) {
    for (const e of entries) {
      if (e.status === 2) continue;
      const file = e['data-file'];
      sequenceNumbers.set(file, e['sequence-number']);
      if (file.content !== 0) {
        deletes.push(file);
        continue;
      }
      if (pruning) pruning.explain.files++;
      if (pruning && !dataFileMatches(filter, file, specById(metadata, file['spec-id']), pruning.schema)) {
        pruning.explain.filesSkipped++;
        continue;
      }
      data.push(file);
    }
  }
  return { data, deletes, sequenceNumbers };
}

/**
 * Plans the read of one snapshot: which files, and how to find the schema's columns in them.
 * Time travel reads with the schema the snapshot was written with (spec Appendix F, point in
 * time reads); a current read uses the current schema.
 */
export async function planIcebergScan(
  io: FileIO,
  metadata: TableMetadata,
  snapshot: Snapshot | undefined,
  opts: { timeTravel: boolean; where?: string },
): Promise<ScanTask> {
  const schemaId = opts.timeTravel && snapshot?.['schema-id'] !== undefined ? snapshot['schema-id'] : metadata['current-schema-id'];
  const schema = schemaById(metadata, schemaId);
  const physicalNames = fallbackNames(metadata, schema);
  const filter = bindFilter(opts.where, schema);
  const explain = emptyExplain();
  if (!snapshot) return { schema, resolution: 'field-id', physicalNames, files: [], explain };

  const { data, deletes, sequenceNumbers } = await liveFiles(io, metadata, snapshot, { filter, schema, explain });
  const deletesOf = planDeletes(metadata, data, deletes, sequenceNumbers);
  const files: ScanFile[] = data.map((f) => {
    const file: ScanFile = { path: enginePath(io, f['file-path']), recordCount: f['record-count'], constants: identityConstants(metadata, schema, f) };
    const d = deletesOf(f);
    if (d) file.deletes = enginePaths(io, d);
    return file;
  });
  const hiddenFields = equalityOnlyFields(metadata, schema, files);
  for (const f of hiddenFields) if (!physicalNames.has(f.id)) physicalNames.set(f.id, f.name);
  return {
    schema,
    resolution: 'field-id',
    // Twinlake writes a field ID on every column of every file; its tables record physical names.
    fieldIdsKnown: metadata.properties[Props.physicalNames] !== undefined,
    physicalNames,
    files,
    explain,
    ...(hiddenFields.length > 0 ? { hiddenFields } : {}),
    ...(filter ? { filterSql: filter.sql } : {}),
  };
}

/**
 * The engine reads local files: a location is handed over as the local file its store keeps it
 * in (which also applies any remapping the FileIO does).
 */
export function enginePath(io: FileIO, uri: string): string {
  const local = io.localPath(uri);
  return local ? fileUri(local) : uri;
}

/** The local file the engine opens for a location (see `enginePath`). */
export function engineLocalPath(io: FileIO, uri: string): string {
  return localPath(enginePath(io, uri));
}

/**
 * Names to find columns by in files written without field IDs: Twinlake's physical names, else
 * the table's name mapping (spec: Column Projection), else the schema's own names.
 */
function fallbackNames(metadata: TableMetadata, schema: Schema): Map<number, string> {
  const names = readPhysicalNames(metadata);
  const mapping = metadata.properties[Props.nameMapping];
  if (names.size === 0 && mapping) {
    const visit = (fields: ReturnType<typeof parseNameMapping>) => {
      for (const f of fields) {
        if (f['field-id'] !== undefined && f.names.length > 0 && !names.has(f['field-id'])) names.set(f['field-id'], f.names[0]!);
        if (f.fields) visit(f.fields);
      }
    };
    visit(parseNameMapping(mapping));
  }
  for (const [id, { field }] of indexById(schema)) if (!names.has(id)) names.set(id, field.name);
  return names;
}

/**
 * Identity partition values for a file. Some writers leave identity-partitioned columns out of the
 * data files; the value in the manifest is then the only copy.
 */
function identityConstants(metadata: TableMetadata, schema: Schema, file: DataFile): Map<number, LiteralValue> | undefined {
  const spec = specById(metadata, file['spec-id']);
  let out: Map<number, LiteralValue> | undefined;
  const fields = indexById(schema);
  for (const pf of spec.fields) {
    if (pf.transform !== 'identity') continue;
    const source = fields.get(pf['source-id']);
    if (!source || typeof source.field.type !== 'string') continue;
    if (!(pf.name in file.partition)) continue;
    out ??= new Map();
    out.set(pf['source-id'], partitionValue(source.field.type, file.partition[pf.name]));
  }
  return out;
}

function partitionValue(type: string, value: unknown): LiteralValue {
  if (value === null || value === undefined) return null;
  if (value instanceof Uint8Array && (type.startsWith('decimal') || type === 'uuid')) return fromBinary(type, value);
  if (type === 'long' || type === 'timestamp' || type === 'timestamptz' || type === 'time' || type.endsWith('_ns')) {
    return typeof value === 'bigint' ? value : BigInt(value as number);
  }
  return value as LiteralValue;
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
function planDeletes(
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
      ? [{ kind: 'vector', path: found.dv['file-path'], offset: found.dv['content-offset']!, length: found.dv['content-size-in-bytes']!, cardinality: found.dv['record-count'] }]
      : found.positionFiles.map((p) => ({ kind: 'position-file', path: p['file-path'], dataFile: path }));
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

/** The deletes with every file named as the engine reads it; `dataFile` stays as the metadata names it. */
function enginePaths(io: FileIO, d: ScanDeletes): ScanDeletes {
  const out: ScanDeletes = {};
  if (d.positions) out.positions = d.positions.map((p) => (p.kind === 'bitmap' ? p : { ...p, path: enginePath(io, p.path) }));
  if (d.equality) out.equality = d.equality.map((e) => ({ ...e, path: enginePath(io, e.path) }));
  return out;
}

/**
 * Equality delete columns missing from the schema being read: a dropped column still applies
 * (spec §Equality Delete Files), so it is read, as the newest schema that had it defines it.
 */
function equalityOnlyFields(metadata: TableMetadata, schema: Schema, files: ScanFile[]): NestedField[] {
  const ids = new Set(files.flatMap((f) => (f.deletes?.equality ?? []).flatMap((e) => e.equalityIds)));
  const known = indexById(schema);
  const out: NestedField[] = [];
  for (const id of ids) {
    if (known.has(id)) continue;
    const schemas = [...metadata.schemas].sort((a, b) => b['schema-id'] - a['schema-id']);
    const field = schemas.map((s) => s.fields.find((f) => f.id === id)).find((f) => f !== undefined);
    if (field) out.push(field);
  }
  return out;
}
