import { fileUri, localPath } from '../../core/uri.ts';
import type { FileIO } from '../../io/file-io.ts';
import { planDeletes } from '../../format/iceberg/scan.ts';
import { fromBinary } from '../../format/iceberg/single-value.ts';
import { indexById, parseNameMapping } from '../../format/iceberg/schema.ts';
import { currentSchema, schemaById, specById } from '../../format/iceberg/table-metadata.ts';
import { bindFilter, dataFileMatches, emptyExplain, manifestMatches, type Filter } from './scan-filter.ts';
import type { DataFile, NestedField, Schema, Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import type { LiteralValue, ScanDeletes, ScanExplain, ScanFile, ScanTask } from '../../format/scan-task.ts';
import { readManifestEntries, readManifestList } from '../commit/manifest-io.ts';
import { Props, readPhysicalNames } from '../../format/dual/table-properties.ts';

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
  const all = await readManifestList(io, snapshot['manifest-list'], snapshot['snapshot-id']);
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
  const fileSizes = new Map<string, number>();
  for (const f of [...data, ...deletes]) fileSizes.set(enginePath(io, f['file-path']), f['file-size-in-bytes']);
  const hiddenFields = equalityOnlyFields(metadata, schema, files);
  for (const f of hiddenFields) if (!physicalNames.has(f.id)) physicalNames.set(f.id, f.name);
  return {
    schema,
    resolution: 'field-id',
    // Twinlake writes a field ID on every column of every file; its tables record physical names.
    // Files added as they were (add-files.ts) may lack them, and the table says so.
    fieldIdsKnown: metadata.properties[Props.physicalNames] !== undefined && metadata.properties[Props.filesWithoutFieldIds] !== 'true',
    physicalNames,
    files,
    explain,
    fileSizes,
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

/** The deletes with every file named as the engine reads it; `dataFile` stays as the metadata names it. */
export function enginePaths(io: FileIO, d: ScanDeletes): ScanDeletes {
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
